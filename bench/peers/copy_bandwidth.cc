// This machine's memory copy bandwidth (one core, memcpy of a buffer far
// larger than the caches): the physical limit of any transport between
// ranks on one node, loopback TCP and shared memory alike. Prints GB/s.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
  constexpr size_t kBytes = 256u << 20;
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), kBytes);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(kBytes) / s / 1e9);
    from[static_cast<size_t>(round)] = to[static_cast<size_t>(round) + 1];  // keep the copies live
  }
  std::printf("%.3f\n", best);
  return 0;
}
