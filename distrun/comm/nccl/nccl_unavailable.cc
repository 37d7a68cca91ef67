// Built when distrun is configured without the CUDA toolkit and NCCL
// (DISTRUN_WITH_NCCL=0, cmake/DistrunGpu.cmake).
#include "distrun/comm/nccl/connect_nccl.h"

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::comm {

std::unique_ptr<Communicator> connectNccl(const Environment& /*env*/, const std::string& backend,
                                          const std::string& /*name*/,
                                          std::chrono::milliseconds /*timeout*/) {
  throw UsageError(fmt::format("backend '{}': {}", backend, kBuiltWithoutNccl));
}

}  // namespace distrun::comm
