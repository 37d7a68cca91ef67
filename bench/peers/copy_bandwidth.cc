// This machine's memory copy bandwidth (one core, memcpy of a buffer far
// larger than the caches): the physical limit of any transport between
// ranks on one node, loopback TCP and shared memory alike. Prints GB/s.
//   copy_bandwidth                 memcpy
//   copy_bandwidth --cross-process memcpy, then process_vm_readv of the same
//                                  size from a child's buffer (the kernel's
//                                  single copy between processes, which the
//                                  shared-memory allgather, alltoall and large
//                                  messages read peers' buffers with), and
//                                  its share of memcpy
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t kBytes = 256u << 20;
constexpr int kRounds = 5;

double gbPerSecond(std::chrono::steady_clock::time_point start) {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(kBytes) / s / 1e9;
}

double bestMemcpy(std::vector<char>& from, std::vector<char>& to) {
  double best = 0;
  for (int round = 0; round < kRounds; ++round) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), kBytes);
    best = std::max(best, gbPerSecond(start));
    from[static_cast<size_t>(round)] = to[static_cast<size_t>(round) + 1];  // keep the copies live
  }
  return best;
}

// `from` read by process_vm_readv from a child (fork: its own copy, which
// it writes once so that its pages are its own), best of the rounds.
double bestCrossProcessRead(std::vector<char>& from, std::vector<char>& to) {
  int ready[2], done[2];
  if (::pipe(ready) != 0 || ::pipe(done) != 0) return 0;
  const pid_t child = ::fork();
  if (child == 0) {
    std::memset(from.data(), 2, kBytes);
    char c = 0;
    if (::write(ready[1], &c, 1) != 1 || ::read(done[0], &c, 1) != 1) ::_exit(1);
    ::_exit(0);
  }
  char c = 0;
  double best = 0;
  if (::read(ready[0], &c, 1) == 1) {
    for (int round = 0; round < kRounds; ++round) {
      iovec local{to.data(), kBytes}, remote{from.data(), kBytes};
      const auto start = std::chrono::steady_clock::now();
      if (::process_vm_readv(child, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(kBytes)) {
        std::perror("copy_bandwidth: process_vm_readv");
        break;
      }
      best = std::max(best, gbPerSecond(start));
    }
  }
  if (::write(done[1], &c, 1) != 1) std::perror("copy_bandwidth: write");
  ::waitpid(child, nullptr, 0);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  const double copy = bestMemcpy(from, to);
  if (argc > 1 && std::string(argv[1]) == "--cross-process") {
    const double read = bestCrossProcessRead(from, to);
    std::printf("memcpy %.3f GB/s, process_vm_readv %.3f GB/s (%.2f of memcpy)\n", copy, read,
                read / copy);
    return read > 0 ? 0 : 1;
  }
  std::printf("%.3f\n", copy);
  return 0;
}
