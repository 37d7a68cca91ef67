// The reduction kernels of each instruction set this CPU runs (comm/reduce.h)
// against memcpy, one core: out = a OP b over arrays of SIZE bytes each, as
// the shared-memory allreduce reduces two ranks' slots, and in place (out =
// a), as it reduces a third rank's slot into the result. GB/s of one operand,
// best of 7 interleaved rounds; last, the widest in place against the
// baseline in place.
//   reduce_bandwidth [TYPE] [OP]     TYPE float (default) ... int64, OP sum ...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "distrun/comm/dtype.h"
#include "distrun/comm/reduce.h"

namespace {

using distrun::comm::DataType;
using distrun::comm::Instructions;
using distrun::comm::ReduceOp;

constexpr size_t kSizes[] = {4u << 10, 16u << 10, 64u << 10, 256u << 10, 1u << 20,
                             4u << 20, 16u << 20, 64u << 20, 256u << 20};
constexpr int kRounds = 7;

// Enough calls that the smallest size runs for about 50 ms.
int callsFor(size_t bytes) { return static_cast<int>(std::max<size_t>(1, (256u << 20) / bytes)); }

// Best GB/s of each step over kRounds rounds, the steps interleaved within
// each round (so that a noisy moment hits all of them alike).
std::vector<double> bestGbPerSecond(size_t bytes, const std::vector<std::function<void()>>& steps) {
  std::vector<double> best(steps.size(), 0.0);
  const int calls = callsFor(bytes);
  for (int round = 0; round < kRounds; ++round) {
    for (size_t k = 0; k < steps.size(); ++k) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) steps[k]();
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best[k] = std::max(best[k], static_cast<double>(bytes) * calls / s / 1e9);
    }
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const DataType type = distrun::comm::parseDataType(argc > 1 ? argv[1] : "float", "TYPE");
  const ReduceOp op = distrun::comm::parseReduceOp(argc > 2 ? argv[2] : "sum", "OP");
  std::vector<Instructions> sets;
  for (Instructions isa : distrun::comm::kAllInstructions) {
    if (isa <= distrun::comm::widestInstructions()) sets.push_back(isa);
  }
  std::printf("# %s %s, GB/s of one operand (one core); out apart from a and b, then out = a\n",
              std::string(nameOf(type)).c_str(), std::string(nameOf(op)).c_str());
  std::printf("# %10s %8s", "bytes", "memcpy");
  for (const char* where : {"", " in place"}) {
    for (Instructions isa : sets) {
      std::printf(" %8s", (std::string(instructionsName(isa)) + where).c_str());
    }
  }
  std::printf(" %8s\n", "ratio");
  std::vector<char> a(kSizes[std::size(kSizes) - 1], 1);
  std::vector<char> b(a.size(), 2);
  std::vector<char> out(a.size(), 0);
  for (size_t bytes : kSizes) {
    const size_t count = bytes / distrun::comm::sizeOf(type);
    std::vector<std::function<void()>> steps = {[&] { std::memcpy(out.data(), a.data(), bytes); }};
    for (char* target : {out.data(), a.data()}) {
      for (Instructions isa : sets) {
        const auto reduce = distrun::comm::reduceKernel(isa, type, op);
        steps.emplace_back([=, &a, &b] { reduce(target, a.data(), b.data(), count); });
      }
    }
    const std::vector<double> best = bestGbPerSecond(bytes, steps);
    std::printf("  %10zu", bytes);
    for (double gbs : best) std::printf(" %8.2f", gbs);
    // The widest against the baseline, both in place.
    std::printf(" %7.2fx\n", best.back() / best[1 + sets.size()]);
  }
  return 0;
}
