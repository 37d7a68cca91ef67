// This machine's memory copy bandwidth (one core, memcpy of a buffer far
// larger than the caches): the physical limit of any transport between
// ranks on one node, loopback TCP and shared memory alike. Prints GB/s.
//   copy_bandwidth                 memcpy
//   copy_bandwidth --cross-process memcpy, then process_vm_readv of the same
//                                  size from a child's buffer (the kernel's
//                                  single copy between processes, which the
//                                  shared-memory allgather, alltoall and large
//                                  messages read peers' buffers with), and
//                                  its share of memcpy; then the same read a
//                                  256 KiB chunk at a time into a buffer that
//                                  stays in L2, copied out with streaming
//                                  stores (comm's copyPastTheCache)
//   copy_bandwidth --at-once N     memcpy in N processes at the same time
//                                  (each its own buffers), the slowest one's
//                                  GB/s and its share of one alone: what each
//                                  of N ranks that all copy at once can have
//                                  of the memory system (an allreduce of N
//                                  ranks on one node reads and writes at least
//                                  a memcpy's bytes on every rank at once)
//   copy_bandwidth --between-cores [A B]
//                                  a process on CPU A writes 256 KiB pieces
//                                  into shared memory while one on CPU B
//                                  copies each out (two pieces in flight, as
//                                  the shared-memory slots have): GB/s of
//                                  what moves from one core's cache to the
//                                  other's, the path of the slots. A and B
//                                  by default: the first two CPUs this
//                                  process may run on
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "distrun/comm/shm/streaming_copy.h"

namespace {

constexpr size_t kBytes = 256u << 20;
constexpr size_t kChunk = 256u << 10;
constexpr int kRounds = 5;
constexpr int kMostProcesses = 64;  // --at-once

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double gbPerSecond(double bytes, double seconds) { return bytes / seconds / 1e9; }

// GB/s of kBytes moved since `start`.
double gbPerSecond(std::chrono::steady_clock::time_point start) {
  return gbPerSecond(static_cast<double>(kBytes), seconds(start));
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

bool readFrom(pid_t child, const char* from, char* to, size_t bytes) {
  iovec local{to, bytes};
  iovec remote{const_cast<char*>(from), bytes};
  if (::process_vm_readv(child, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(bytes)) {
    return true;
  }
  std::perror("copy_bandwidth: process_vm_readv");
  return false;
}

// The whole buffer in one process_vm_readv.
double readOnce(pid_t child, const char* from, char* to) {
  const auto start = std::chrono::steady_clock::now();
  return readFrom(child, from, to, kBytes) ? gbPerSecond(start) : 0;
}

// A chunk at a time into `bounce` (it stays in L2), then out with
// streaming stores.
double readBounced(pid_t child, const char* from, char* to, char* bounce) {
  const auto start = std::chrono::steady_clock::now();
  for (size_t at = 0; at < kBytes; at += kChunk) {
    if (!readFrom(child, from + at, bounce, kChunk)) return 0;
    distrun::comm::copyPastTheCache(to + at, bounce, kChunk);
  }
  distrun::comm::finishCopiesPastTheCache();
  return gbPerSecond(start);
}

// `from` read by process_vm_readv from a child (fork: its own copy, which
// it writes once so that its pages are its own), best of the rounds: in
// one call, and bounced (readBounced), interleaved.
std::pair<double, double> bestCrossProcessReads(std::vector<char>& from, std::vector<char>& to) {
  int ready[2], done[2];
  if (::pipe(ready) != 0 || ::pipe(done) != 0) return {0, 0};
  const pid_t child = ::fork();
  if (child == 0) {
    std::memset(from.data(), 2, kBytes);
    char c = 0;
    if (::write(ready[1], &c, 1) != 1 || ::read(done[0], &c, 1) != 1) ::_exit(1);
    ::_exit(0);
  }
  char c = 0;
  double once = 0, bounced = 0;
  std::vector<char> bounce(kChunk);
  if (::read(ready[0], &c, 1) == 1) {
    for (int round = 0; round < kRounds; ++round) {
      once = std::max(once, readOnce(child, from.data(), to.data()));
      bounced = std::max(bounced, readBounced(child, from.data(), to.data(), bounce.data()));
    }
  }
  if (::write(done[1], &c, 1) != 1) std::perror("copy_bandwidth: write");
  ::waitpid(child, nullptr, 0);
  return {once, bounced};
}

// What the processes of --at-once share: a barrier that starts each round
// in all of them at once, and each one's time of each round.
struct AtOnce {
  pthread_barrier_t start;
  double seconds[kRounds][kMostProcesses];
};

void copyInRounds(AtOnce& shared, int process) {
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  for (int round = 0; round < kRounds; ++round) {
    pthread_barrier_wait(&shared.start);
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), kBytes);
    shared.seconds[round][process] = seconds(start);
    from[static_cast<size_t>(round)] = to[static_cast<size_t>(round) + 1];
  }
}

// memcpy in `processes` processes at once: GB/s of the slowest in the
// best round.
double slowestOfCopiesAtOnce(int processes) {
  void* memory =
      ::mmap(nullptr, sizeof(AtOnce), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return 0;
  auto* shared = new (memory) AtOnce{};
  pthread_barrierattr_t shareable;
  pthread_barrierattr_init(&shareable);
  pthread_barrierattr_setpshared(&shareable, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(&shared->start, &shareable, static_cast<unsigned>(processes));
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const pid_t child = ::fork();
    if (child == 0) {
      copyInRounds(*shared, p);
      ::_exit(0);
    }
    children.push_back(child);
  }
  bool ok = true;
  for (const pid_t child : children) {
    int status = 0;
    ok = ::waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
         ok;
  }
  double best = 0;
  for (int round = 0; ok && round < kRounds; ++round) {
    const double slowest =
        *std::max_element(shared->seconds[round], shared->seconds[round] + processes);
    best = std::max(best, gbPerSecond(static_cast<double>(kBytes), slowest));
  }
  ::munmap(memory, sizeof(AtOnce));
  return best;
}

// What the two processes of --between-cores share: two pieces, and how
// many pieces the writer has written and the reader has read.
struct Pieces {
  std::atomic<uint64_t> written;
  std::atomic<uint64_t> read;
  alignas(64) char piece[2][kChunk];
};

constexpr uint64_t kPiecesMoved = kBytes / kChunk * 4;

void onCpu(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ::sched_setaffinity(0, sizeof(one), &one);
}

void writePieces(Pieces& shared) {
  std::vector<char> from(kChunk, 3);
  for (uint64_t k = 0; k < kPiecesMoved; ++k) {
    while (shared.read.load(std::memory_order_acquire) + 2 <= k) {
    }
    std::memcpy(shared.piece[k % 2], from.data(), kChunk);
    shared.written.store(k + 1, std::memory_order_release);
  }
}

double readPieces(Pieces& shared) {
  std::vector<char> to(kChunk, 0);
  while (shared.written.load(std::memory_order_acquire) == 0) {
  }
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t k = 0; k < kPiecesMoved; ++k) {
    while (shared.written.load(std::memory_order_acquire) <= k) {
    }
    std::memcpy(to.data(), shared.piece[k % 2], kChunk);
    shared.read.store(k + 1, std::memory_order_release);
  }
  return gbPerSecond(static_cast<double>(kPiecesMoved * kChunk), seconds(start));
}

bool mayRunOn(int cpu) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  return cpu >= 0 && cpu < CPU_SETSIZE && ::sched_getaffinity(0, sizeof(mine), &mine) == 0 &&
         CPU_ISSET(cpu, &mine);
}

// GB/s of pieces written on CPU `writer` and read on CPU `reader` (both
// CPUs this process may run on).
double betweenCores(int writer, int reader) {
  void* memory =
      ::mmap(nullptr, sizeof(Pieces), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return 0;
  auto* shared = new (memory) Pieces{};
  const pid_t child = ::fork();
  if (child == 0) {
    onCpu(writer);
    writePieces(*shared);
    ::_exit(0);
  }
  onCpu(reader);
  const double gb = readPieces(*shared);
  ::waitpid(child, nullptr, 0);
  ::munmap(memory, sizeof(Pieces));
  return gb;
}

// The first two CPUs this process may run on; -1 for each it lacks.
std::pair<int, int> firstTwoCpus() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  std::pair<int, int> two{-1, -1};
  if (::sched_getaffinity(0, sizeof(mine), &mine) != 0) return two;
  for (int cpu = 0; cpu < CPU_SETSIZE && two.second < 0; ++cpu) {
    if (!CPU_ISSET(cpu, &mine)) continue;
    (two.first < 0 ? two.first : two.second) = cpu;
  }
  return two;
}

int usage() {
  std::fprintf(stderr,
               "usage: copy_bandwidth [--cross-process | --at-once N (1 to 64) | --between-cores "
               "[CPU CPU]]\n");
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--at-once") {
    const int processes = argc > 2 ? std::atoi(argv[2]) : 0;
    if (processes < 1 || processes > kMostProcesses) return usage();
    std::vector<char> from(kBytes, 1), to(kBytes, 0);
    const double alone = bestMemcpy(from, to);
    const double each = slowestOfCopiesAtOnce(processes);
    std::printf("memcpy %.3f GB/s alone, %.3f GB/s each in %d processes at once (%.2f of alone)\n",
                alone, each, processes, each / alone);
    return each > 0 ? 0 : 1;
  }
  if (mode == "--between-cores") {
    if (argc != 2 && argc != 4) return usage();
    const auto [writer, reader] =
        argc == 4 ? std::pair{std::atoi(argv[2]), std::atoi(argv[3])} : firstTwoCpus();
    if (!mayRunOn(writer) || !mayRunOn(reader) || writer == reader) {
      std::fprintf(stderr,
                   "copy_bandwidth: --between-cores: expected two different CPUs this process may "
                   "run on (taskset -p %d), got %d and %d\n",
                   static_cast<int>(::getpid()), writer, reader);
      return 64;
    }
    double best = 0;
    for (int round = 0; round < kRounds; ++round)
      best = std::max(best, betweenCores(writer, reader));
    std::printf("%.3f GB/s from CPU %d's cache to CPU %d's\n", best, writer, reader);
    return 0;
  }
  if (!mode.empty() && mode != "--cross-process") return usage();
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  const double copy = bestMemcpy(from, to);
  if (mode == "--cross-process") {
    const auto [read, bounced] = bestCrossProcessReads(from, to);
    std::printf(
        "memcpy %.3f GB/s, process_vm_readv %.3f GB/s (%.2f of memcpy), bounced through L2 "
        "with streaming stores %.3f GB/s (%.2f of memcpy)\n",
        copy, read, read / copy, bounced, bounced / copy);
    return read > 0 && bounced > 0 ? 0 : 1;
  }
  std::printf("%.3f\n", copy);
  return 0;
}
