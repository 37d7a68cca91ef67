// "matmul": a fixed single-threaded matrix product, timed, so rank 0 can
// compare nodes (flagStragglers). The work is fixed, not the time: every
// node does the same and the times say which is slow.
#include "distrun/doctor/matmul_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

constexpr const char* kMatmul = "matmul";
// 512: about 35 ms a product on a 2020s server core, long enough to time
// well and short enough that the whole check stays under a second.
constexpr size_t kSize = kMatmulSize;
constexpr int kRepetitions = 5;

// Small whole numbers: every partial sum is exact in float (512 * 6 * 4 <
// 2^24), so the result can be checked exactly.
float aAt(size_t i, size_t k) { return static_cast<float>((i + 2 * k) % 7); }
float bAt(size_t k, size_t j) { return static_cast<float>((3 * k + j) % 5); }

struct Matrices {
  std::vector<float> a, b, c;
};

Matrices makeMatrices() {
  Matrices m{std::vector<float>(kSize * kSize), std::vector<float>(kSize * kSize), {}};
  for (size_t i = 0; i < kSize; ++i) {
    for (size_t j = 0; j < kSize; ++j) {
      m.a[i * kSize + j] = aAt(i, j);
      m.b[i * kSize + j] = bAt(i, j);
    }
  }
  return m;
}

// c = a b, row by row (the loop order that vectorizes), in milliseconds.
double timeProduct(Matrices& m) {
  const auto start = std::chrono::steady_clock::now();
  m.c.assign(kSize * kSize, 0.0f);
  for (size_t i = 0; i < kSize; ++i) {
    for (size_t k = 0; k < kSize; ++k) {
      const float x = m.a[i * kSize + k];
      for (size_t j = 0; j < kSize; ++j) m.c[i * kSize + j] += x * m.b[k * kSize + j];
    }
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The first diagonal entry of c that differs from its own dot product, if
// any: checking the result is also what keeps the compiler from dropping it.
std::optional<size_t> wrongEntry(const Matrices& m) {
  for (size_t i = 0; i < kSize; ++i) {
    float expected = 0;
    for (size_t k = 0; k < kSize; ++k) expected += aAt(i, k) * bAt(k, i);
    if (m.c[i * kSize + i] != expected) return i;
  }
  return std::nullopt;
}

}  // namespace

double medianOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

CheckResult matmulVerdict(const std::vector<double>& timesMs, std::optional<size_t> wrongEntry) {
  if (wrongEntry) {
    return fail(kMatmul,
                fmt::format("the {}x{} float matrix product came out wrong (entry {},{})", kSize,
                            kSize, *wrongEntry, *wrongEntry),
                "this node's CPU or memory computes wrongly: report it to the admins and "
                "exclude it (sbatch --exclude=NODE)");
  }
  // The fastest run: what the node does when nothing else takes its core
  // for a moment. A node slowed for good (a neighbour's job, throttling) is
  // slow in every run; one hiccup in one run is no straggler.
  const double ms = *std::min_element(timesMs.begin(), timesMs.end());
  CheckResult result = ok(kMatmul, fmt::format("{}x{} float matrix product: {:.1f} ms (best of {})",
                                               kSize, kSize, ms, timesMs.size()));
  result.values["matmul_ms"] = ms;
  return result;
}

CheckResult checkMatmul(const ProbeContext&) {
  Matrices m = makeMatrices();
  std::vector<double> times;
  for (int r = 0; r < kRepetitions; ++r) {
    times.push_back(timeProduct(m));
    if (std::optional<size_t> i = wrongEntry(m)) return matmulVerdict(times, i);
  }
  return matmulVerdict(times, std::nullopt);
}

}  // namespace distrun::doctor
