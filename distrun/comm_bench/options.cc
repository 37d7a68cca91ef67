#include "distrun/comm_bench/options.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "distrun/comm/connect.h"
#include "distrun/common/error.h"

namespace distrun::comm_bench {

size_t parseBytes(const std::string& text, const std::string& what) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string suffix = text.substr(digits);
  size_t shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (!suffix.empty())
    digits = 0;  // reject below
  if (digits == 0 || digits > 15) {
    throw UsageError(fmt::format(
        "{} '{}' is not a size (expected a number with an optional K, M or G suffix)", what, text));
  }
  return static_cast<size_t>(std::stoull(text.substr(0, digits))) << shift;
}

std::vector<size_t> sweepSizes(const BenchOptions& o) {
  std::vector<size_t> sizes;
  for (size_t size = o.minBytes; size <= o.maxBytes;) {
    sizes.push_back(size);
    size_t next = o.stepFactor > 1
                      ? static_cast<size_t>(std::ceil(static_cast<double>(size) * o.stepFactor))
                      : size + o.stepBytes;
    if (next <= size) next = size + 1;  // a 0-byte start with a factor
    size = next;
  }
  return sizes;
}

void validate(const BenchOptions& o) {
  if (o.minBytes > o.maxBytes) {
    throw UsageError(fmt::format("-b {} is above -e {}", o.minBytes, o.maxBytes));
  }
  if (o.stepFactor <= 1 && o.stepBytes == 0) {
    throw UsageError("-i 0 with no -f above 1 would never reach -e");
  }
  if (o.iters < 1) throw UsageError(fmt::format("-n {} must be at least 1", o.iters));
  if (o.warmupIters < 0) throw UsageError(fmt::format("-w {} is negative", o.warmupIters));
  if (o.checkIters < 0) throw UsageError(fmt::format("-c {} is negative", o.checkIters));
  if (o.average < 0 || o.average > 3) {
    throw UsageError(
        fmt::format("-a {} is not 0 (rank 0), 1 (mean), 2 (min) or 3 (max)", o.average));
  }
  if (o.format != "table" && o.format != "json" && o.format != "csv") {
    throw UsageError(fmt::format("--format '{}' is not table, json or csv", o.format));
  }
  comm::checkBackendName(o.backend, "--backend");
  if (o.nprocPerNode < 1) {
    throw UsageError(fmt::format("--nproc-per-node {} must be at least 1", o.nprocPerNode));
  }
  if (o.timeoutSeconds < 1)
    throw UsageError(fmt::format("-T {} must be at least 1", o.timeoutSeconds));
  if (o.piIntervals < 1)
    throw UsageError(fmt::format("--intervals {} must be at least 1", o.piIntervals));
  if (sweepSizes(o).size() > 4096) {
    throw UsageError("-b/-e/-i/-f give more than 4096 sizes; raise -i or -f");
  }
}

}  // namespace distrun::comm_bench
