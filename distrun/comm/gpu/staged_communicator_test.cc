// The staged path and OnHostCommunicator, around Gloo worlds of threads:
// on the host-memory runtime everywhere (their chunking, offsets and
// in-place layouts, through the contract suite), and on a real GPU, 2 and
// 4 ranks sharing it, where there is one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "distrun/comm/gpu/gpu_runtime.h"
#include "distrun/comm/gpu/on_host_communicator.h"
#include "distrun/comm/gpu/staged_communicator.h"
#include "distrun/comm/gpu/testing/host_memory_runtime.h"
#include "distrun/comm/gpu/testing/no_gpu.h"
#include "distrun/comm/testing/contract.h"
#include "distrun/common/environment.h"

namespace distrun::comm::gpu {
namespace {

using ::testing::HasSubstr;

// The contract over OnHost(Staged(a Gloo rank)) on every rank of `ranks`.
void checkStagedContract(int ranks, const GpuRuntime& gpu, size_t chunkBytes) {
  const std::vector<std::string> errors =
      comm::testing::runGlooThreads(ranks, [&](Communicator& c) {
        auto staged = std::make_unique<StagedCommunicator>(c, gpu, StagedOptions{0, chunkBytes});
        EXPECT_THAT(staged->transport(),
                    HasSubstr("staged through pinned host memory from cuda:0"));
        OnHostCommunicator onHost(std::move(staged), gpu, 0);
        for (const std::string& failure : comm::testing::checkContract(onHost)) {
          ADD_FAILURE() << "rank " << c.rank() << ": " << failure;
        }
      });
  for (const std::string& e : errors) EXPECT_EQ(e, "");
}

// 64-byte chunks: the contract's counts (up to 1031 elements) go in many
// pipelined chunks with a remainder.
TEST(StagedCommunicatorTest, KeepsTheContractInSmallChunksOnTwoRanks) {
  checkStagedContract(2, testing::hostMemoryRuntime(), 64);
}

TEST(StagedCommunicatorTest, KeepsTheContractInSmallChunksOnFourRanks) {
  checkStagedContract(4, testing::hostMemoryRuntime(), 64);
}

TEST(StagedCommunicatorTest, KeepsTheContractWhenEveryCallIsOneChunk) {
  checkStagedContract(3, testing::hostMemoryRuntime(), 4u << 20);
}

TEST(StagedCommunicatorTest, AChunkTooSmallForAnElementIsAUsageError) {
  const std::vector<std::string> errors = comm::testing::runGlooThreads(1, [&](Communicator& c) {
    EXPECT_THROW(StagedCommunicator(c, testing::hostMemoryRuntime(), StagedOptions{0, 8}),
                 UsageError);
  });
  EXPECT_EQ(errors.at(0), "");
}

// What NCCL refuses before 2.30 ("Duplicate GPU detected"): several ranks
// on one GPU, here through the staged path.
TEST(StagedGpuTest, TwoAndFourRanksOnOneGpuKeepTheContract) {
  if (const std::string why = gpu::testing::whyNoGpu(); !why.empty()) GTEST_SKIP() << why;
  const GpuRuntime& cuda = loadGpuRuntime(MapEnvironment{}, GpuVendor::kNvidia);
  checkStagedContract(2, cuda, 4096);
  checkStagedContract(4, cuda, 4096);
}

}  // namespace
}  // namespace distrun::comm::gpu
