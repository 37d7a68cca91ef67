#include "distrun/comm_bench/options.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "distrun/comm/backend_choice.h"
#include "distrun/comm/connect.h"
#include "distrun/comm/nccl/connect_nccl.h"
#include "distrun/common/error.h"
#include "distrun/config.h"

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

namespace {

// --device and --backend together: host backends on the CPU; nccl, rccl
// and the staged gloo on a GPU, in a build that has the GPU parts.
void checkDevice(const BenchOptions& o) {
  const bool gpuBackend = o.backend == "nccl" || o.backend == "rccl";
  if (o.device == "cpu") {
    if (gpuBackend) {
      throw UsageError(fmt::format(
          "--backend {} moves GPU memory: add --device cuda (or use --backend gloo on the CPU)",
          o.backend));
    }
    comm::checkBackendName(o.backend, "--backend");
    return;
  }
  if (o.device != "cuda") {
    throw UsageError(fmt::format("--device '{}' is not cpu or cuda", o.device));
  }
  if (!DISTRUN_WITH_NCCL)
    throw UsageError(std::string("--device cuda: ") + comm::kBuiltWithoutNccl);
  if (o.collective == "pi") throw UsageError("pi runs on the CPU: drop --device cuda");
  if (!gpuBackend && o.backend != "auto" && o.backend != "gloo") {
    throw UsageError(fmt::format(
        "--backend {} with --device cuda: expected auto (nccl), nccl, rccl or gloo (staged "
        "through host memory)",
        o.backend));
  }
}

}  // namespace

std::string benchBackend(const BenchOptions& o) {
  return o.device == "cuda" && o.backend == "auto" ? "nccl" : o.backend;
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
  checkDevice(o);
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
