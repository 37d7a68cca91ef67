// The GPU runtime loaded at run time: this machine's CUDA runtime, and the
// one-line errors where a runtime or a GPU is missing. No GPU is needed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "distrun/comm/gpu/gpu_runtime.h"
#include "distrun/comm/gpu/testing/config_error.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"

namespace distrun::comm::gpu {
namespace {

using gpu::testing::configErrorOf;
using ::testing::HasSubstr;

TEST(GpuRuntimeTest, TheCudaRuntimeLoadsAndAMachineWithoutAGpuSaysSoInOneLine) {
  const GpuRuntime& cuda = loadGpuRuntime(MapEnvironment{}, GpuVendor::kNvidia);
  EXPECT_THAT(cuda.library, HasSubstr("libcudart.so"));
  int visible = 0;
  if (cuda.getDeviceCount(&visible) == cudaSuccess && visible > 0) {
    EXPECT_EQ(cuda.deviceCount(), visible);
    GTEST_SKIP() << "this machine has " << visible << " GPUs: the no-GPU error is not reachable";
  }
  EXPECT_THAT(configErrorOf([&] { cuda.deviceCount(); }),
              HasSubstr("this process sees no GPU (cudaGetDeviceCount: "));
}

TEST(GpuRuntimeTest, AMissingRuntimeIsOneLineNamingWhatWasTried) {
  EXPECT_THAT(configErrorOf([] {
                loadGpuRuntime(MapEnvironment{{"DISTRUN_GPU_RUNTIME", "/nonexistent/libcudart.so"}},
                               GpuVendor::kNvidia);
              }),
              HasSubstr("the CUDA runtime could not be loaded (tried "
                        "/nonexistent/libcudart.so: "));
  const std::string hip = configErrorOf([] { loadGpuRuntime(MapEnvironment{}, GpuVendor::kAmd); });
  if (hip.empty()) return;  // HIP is installed here
  EXPECT_THAT(hip, HasSubstr("the HIP runtime could not be loaded (tried "
                             "libamdhip64.so.6, libamdhip64.so: "));
}

}  // namespace
}  // namespace distrun::comm::gpu
