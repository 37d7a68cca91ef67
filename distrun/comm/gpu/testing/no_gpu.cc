#include "distrun/comm/gpu/testing/no_gpu.h"

#include <fmt/format.h>

#include "distrun/comm/gpu/gpu_runtime.h"
#include "distrun/common/environment.h"

namespace distrun::comm::gpu::testing {

std::string whyNoGpu() {
  const GpuRuntime& cuda = loadGpuRuntime(MapEnvironment{}, GpuVendor::kNvidia);
  int visible = 0;
  const cudaError_t result = cuda.getDeviceCount(&visible);
  if (result == cudaSuccess && visible > 0) return "";
  return fmt::format("no GPU here (cudaGetDeviceCount: {})",
                     result == cudaSuccess ? "0 devices" : cuda.getErrorString(result));
}

}  // namespace distrun::comm::gpu::testing
