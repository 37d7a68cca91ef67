// `distrun run --cpu-bind/--gpu-bind` with real workers (label: multiproc):
// each worker's affinity as the kernel reports it (Cpus_allowed_list in
// /proc/self/status) and the GPU visibility variable it is given, on this
// node or on one described by DISTRUN_NODE_TOPOLOGY.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/binding/binding_plan.h"
#include "distrun/common/system.h"
#include "distrun/testing/command.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::testing {
namespace {

class LauncherBindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "launcher_binding_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    allowed_ = usableCpus();
    std::sort(allowed_.begin(), allowed_.end());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs two workers with `flags`; each writes its affinity,
  // CUDA_VISIBLE_DEVICES and DISTRUN_LOCAL_DEVICE to <dir>/<local rank>.
  CommandResult runTwo(const std::string& flags, const std::string& env = "") {
    std::string body =
        "{ grep Cpus_allowed_list /proc/self/status | cut -f2; "
        "echo \"${CUDA_VISIBLE_DEVICES-unset}\"; echo \"${DISTRUN_LOCAL_DEVICE-unset}\"; } > " +
        dir_ + "/$LOCAL_RANK";
    return runCommand(env + " timeout 120 " + quote(binaryPath("distrun")) +
                      " run --nproc-per-node 2 " + flags + " sh -c " + quote(body));
  }
  std::vector<std::string> worker(int localRank) const {
    return lines(readTextFile(dir_ + "/" + std::to_string(localRank), "worker output"));
  }
  bool hasCpusZeroAndOne() const {
    return std::count(allowed_.begin(), allowed_.end(), 0) &&
           std::count(allowed_.begin(), allowed_.end(), 1);
  }

  std::string dir_;
  binding::CpuList allowed_;
};

TEST_F(LauncherBindingTest, CoresGiveEachWorkerItsPlansShare) {
  if (allowed_.size() < 2) GTEST_SKIP() << "needs two usable CPUs";
  CommandResult r = runTwo("--cpu-bind cores");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<binding::CpuList> plan = binding::splitEvenly(allowed_, 2);
  for (int rank : {0, 1}) {
    EXPECT_EQ(worker(rank).at(0), binding::formatCpuList(plan[static_cast<size_t>(rank)]));
    EXPECT_EQ(worker(rank).at(1), "unset") << "no GPU on this node";
  }
}

TEST_F(LauncherBindingTest, NoneLeavesTheAgentsWholeSet) {
  CommandResult r = runTwo("--cpu-bind none");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (int rank : {0, 1}) EXPECT_EQ(worker(rank).at(0), binding::formatCpuList(allowed_));
}

TEST_F(LauncherBindingTest, MasksAreTheWorkersAffinity) {
  if (!hasCpusZeroAndOne()) GTEST_SKIP() << "needs CPUs 0 and 1";
  CommandResult r = runTwo("--cpu-bind mask:0x2,0x1");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(worker(0).at(0), "1");
  EXPECT_EQ(worker(1).at(0), "0");
}

// torchrun's contract: both workers see both GPUs, and GPU LOCAL_RANK, the
// plan's, is the one near their cores; a map reorders the list so that the
// mapped GPU is cuda:LOCAL_RANK, and the cores follow it.
TEST_F(LauncherBindingTest, EachWorkersCudaLocalRankIsTheGpuClosestToItsCores) {
  if (!hasCpusZeroAndOne()) GTEST_SKIP() << "needs CPUs 0 and 1";
  std::string xml =
      std::string(DISTRUN_SOURCE_DIR) + "/distrun/binding/testdata/two_cpus_two_gpus.xml";
  CommandResult r = runTwo("--site none", "DISTRUN_NODE_TOPOLOGY=" + quote(xml));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(worker(0), ::testing::ElementsAre("0", "unset", "0"));
  EXPECT_THAT(worker(1), ::testing::ElementsAre("1", "unset", "1"));
  CommandResult mapped =
      runTwo("--site none --gpu-bind map:1,0", "DISTRUN_NODE_TOPOLOGY=" + quote(xml));
  ASSERT_EQ(mapped.exitCode, 0) << mapped.err;
  EXPECT_THAT(worker(0), ::testing::ElementsAre("1", "1,0", "0")) << "GPU 1 and its core";
  EXPECT_THAT(worker(1), ::testing::ElementsAre("0", "1,0", "1")) << "GPU 0 and its core";
  CommandResult given =
      runTwo("--site none", "CUDA_VISIBLE_DEVICES=1,0 DISTRUN_NODE_TOPOLOGY=" + quote(xml));
  ASSERT_EQ(given.exitCode, 0) << given.err;
  EXPECT_THAT(worker(0), ::testing::ElementsAre("1", "1,0", "0"))
      << "the inherited list's first GPU, 1, and its core";
}

TEST_F(LauncherBindingTest, ExplainPrintsThePlanAndStartsNothing) {
  if (!hasCpusZeroAndOne()) GTEST_SKIP() << "needs CPUs 0 and 1";
  std::string xml =
      std::string(DISTRUN_SOURCE_DIR) + "/distrun/binding/testdata/two_cpus_two_gpus.xml";
  CommandResult r = runTwo("--site none --explain", "DISTRUN_NODE_TOPOLOGY=" + quote(xml));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> table = lines(r.out);
  ASSERT_EQ(table.size(), 3u) << r.out;
  EXPECT_THAT(table[0], ::testing::MatchesRegex("rank +node +cores +mask +gpu +device +numa"));
  EXPECT_THAT(table[2], ::testing::MatchesRegex("1 +[^ ]+ +1 +0x2 +1 +cuda:1 +1"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/0")) << "a worker ran";
}

}  // namespace
}  // namespace distrun::testing
