// Built when distrun has no GPU parts (DISTRUN_WITH_NCCL=0): options.cc
// refuses --device cuda first, so these are never reached from the CLI.
#include "distrun/comm/nccl/connect_nccl.h"
#include "distrun/comm_bench/gpu_bench.h"
#include "distrun/common/error.h"

namespace distrun::comm_bench {

std::unique_ptr<GpuBench> connectGpuBench(const Environment& /*env*/,
                                          const std::string& /*backend*/,
                                          const comm::ConnectOptions& /*options*/) {
  throw UsageError(std::string("--device cuda: ") + comm::kBuiltWithoutNccl);
}

int visibleGpus(const Environment& /*env*/, const std::string& /*backend*/) {
  throw UsageError(std::string("--device cuda: ") + comm::kBuiltWithoutNccl);
}

}  // namespace distrun::comm_bench
