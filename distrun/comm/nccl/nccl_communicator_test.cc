// The nccl backend through connect(): on a machine without a GPU, the one
// line that says so; on a GPU, the Communicator contract at world size 1,
// its buffers copied to the device (OnHostCommunicator).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "distrun/comm/connect.h"
#include "distrun/comm/gpu/gpu_runtime.h"
#include "distrun/comm/gpu/on_host_communicator.h"
#include "distrun/comm/gpu/testing/no_gpu.h"
#include "distrun/comm/nccl/nccl_communicator.h"
#include "distrun/comm/testing/contract.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/common/system.h"

namespace distrun::comm::nccl {
namespace {

using ::testing::HasSubstr;

MapEnvironment oneRank() {
  return MapEnvironment{{"RANK", "0"},
                        {"WORLD_SIZE", "1"},
                        {"LOCAL_RANK", "0"},
                        {"LOCAL_WORLD_SIZE", "1"},
                        {"MASTER_ADDR", "127.0.0.1"},
                        {"MASTER_PORT", std::to_string(pickFreeTcpPort())},
                        {"DISTRUN_TOKEN", "nccl-test"}};
}

TEST(NcclConnectTest, WithoutAGpuConnectIsOneConfigErrorSayingSo) {
  if (gpu::testing::whyNoGpu().empty()) GTEST_SKIP() << "this machine has a GPU";
  ConnectOptions options;
  options.backend = "nccl";
  try {
    connect(oneRank(), options);
    ADD_FAILURE() << "connected without a GPU";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("this process sees no GPU (cudaGetDeviceCount: "));
  }
}

TEST(NcclConnectTest, AMissingNcclStopsConnectBeforeTheStore) {
  MapEnvironment env = oneRank();
  env.set("DISTRUN_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
  env.set("MASTER_ADDR", "192.0.2.1");  // never reached: the library is loaded first
  ConnectOptions options;
  options.backend = "nccl";
  options.timeout = std::chrono::seconds(1);
  try {
    connect(env, options);
    ADD_FAILURE() << "connected without NCCL";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("NCCL (for the nccl backend) could not be loaded"));
  }
}

TEST(NcclContractTest, OneRankOnOneGpuKeepsTheCommunicatorContract) {
  if (const std::string why = gpu::testing::whyNoGpu(); !why.empty()) GTEST_SKIP() << why;
  ConnectOptions options;
  options.backend = "nccl";
  std::unique_ptr<Communicator> nccl = connect(oneRank(), options);
  EXPECT_EQ(nccl->backend(), "nccl");
  EXPECT_THAT(nccl->transport(), HasSubstr(" on cuda:0"));
  gpu::OnHostCommunicator comm(std::move(nccl),
                               gpu::loadGpuRuntime(MapEnvironment{}, gpu::GpuVendor::kNvidia), 0);
  for (const std::string& failure : testing::checkContract(comm)) ADD_FAILURE() << failure;
}

}  // namespace
}  // namespace distrun::comm::nccl
