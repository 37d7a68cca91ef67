#include "distrun/binding/agent_gpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/binding/binding_plan.h"
#include "distrun/common/error.h"

namespace distrun::binding {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Four GPUs on two sockets of eight cores (GPUs 0,1 near cores 0-7).
NodeTopology fourGpus() {
  NodeTopology node;
  node.source = "a test node";
  for (int c = 0; c < 16; ++c) node.cpus.push_back(c);
  node.numaNodes = {{0, {0, 1, 2, 3, 4, 5, 6, 7}}, {1, {8, 9, 10, 11, 12, 13, 14, 15}}};
  node.gpus = {
      {0, 0, {0, 1, 2, 3}}, {1, 0, {4, 5, 6, 7}}, {2, 1, {8, 9, 10, 11}}, {3, 1, {12, 13, 14, 15}}};
  return node;
}

std::vector<int> indicesOf(const NodeTopology& node) {
  std::vector<int> out;
  for (const NodeTopology::Gpu& g : node.gpus) out.push_back(g.index);
  return out;
}

TEST(AgentGpusTest, NothingInheritedIsEveryGpuOfTheNode) {
  AgentGpus gpus = agentGpus(fourGpus(), MapEnvironment());
  EXPECT_FALSE(gpus.inherited);
  EXPECT_EQ(gpus.variable, "CUDA_VISIBLE_DEVICES");
  EXPECT_THAT(gpus.ids, ElementsAre("0", "1", "2", "3"));
  EXPECT_THAT(indicesOf(gpus.node), ElementsAre(0, 1, 2, 3));
}

TEST(AgentGpusTest, AnInheritedListKeepsOnlyItsGpusInItsOrder) {
  AgentGpus gpus = agentGpus(fourGpus(), MapEnvironment{{"CUDA_VISIBLE_DEVICES", "3,1"}});
  EXPECT_TRUE(gpus.inherited);
  EXPECT_THAT(gpus.ids, ElementsAre("3", "1"));
  EXPECT_THAT(indicesOf(gpus.node), ElementsAre(3, 1));
  EXPECT_THAT(gpus.node.gpus[0].cpus, ElementsAre(12, 13, 14, 15));
  // The plan gives local rank 0 the first of them, cuda:0, and its cores.
  std::vector<RankBinding> plan = planBinding(gpus.node, {2, 0, -1});
  EXPECT_THAT(plan[0].gpus, ElementsAre(3));
  EXPECT_EQ(plan[0].device, 0);
  EXPECT_THAT(plan[1].cpus, ElementsAre(4, 5, 6, 7));
}

TEST(AgentGpusTest, SlurmsJobGpusPlaceARenumberedList) {
  // Under a device cgroup the job's GPUs 2,3 are the task's 0,1.
  AgentGpus gpus = agentGpus(
      fourGpus(), MapEnvironment{{"CUDA_VISIBLE_DEVICES", "0,1"}, {"SLURM_STEP_GPUS", "2,3"}});
  EXPECT_THAT(gpus.ids, ElementsAre("0", "1"));
  EXPECT_THAT(indicesOf(gpus.node), ElementsAre(2, 3));
  AgentGpus job =
      agentGpus(fourGpus(), MapEnvironment{{"ROCR_VISIBLE_DEVICES", "0"}, {"SLURM_JOB_GPUS", "1"}});
  EXPECT_EQ(job.variable, "ROCR_VISIBLE_DEVICES");
  EXPECT_THAT(indicesOf(job.node), ElementsAre(1));
}

TEST(AgentGpusTest, UuidsShareTheCoresEvenly) {
  AgentGpus gpus = agentGpus(fourGpus(), MapEnvironment{{"CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b"}});
  ASSERT_EQ(gpus.node.gpus.size(), 2u);
  EXPECT_EQ(gpus.node.gpus[1].index, -1);
  EXPECT_THAT(gpus.node.gpus[1].cpus, ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_THAT(gpus.node.source, HasSubstr("GPU-a,GPU-b"));
}

TEST(AgentGpusTest, AnIndexTheNodeLacksIsAnErrorNamingTheVariable) {
  try {
    agentGpus(fourGpus(), MapEnvironment{{"CUDA_VISIBLE_DEVICES", "1,7"}});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "CUDA_VISIBLE_DEVICES=1,7: GPU 7 is not one of the node's 4 GPUs (0-3, from a "
                 "test node)");
  }
}

TEST(AgentGpusTest, AGpuLessNodeIgnoresTheList) {
  NodeTopology cpuOnly = fourGpus();
  cpuOnly.gpus.clear();
  AgentGpus gpus = agentGpus(cpuOnly, MapEnvironment{{"CUDA_VISIBLE_DEVICES", "0"}});
  EXPECT_TRUE(gpus.node.gpus.empty());
}

TEST(WorkerGpusTest, ThePlansGpuAtLocalRankLeavesTheListAsItIs) {
  WorkerGpus w = workerGpus({"0", "1", "2", "3"}, 2, 2, false);
  EXPECT_FALSE(w.visible);
  EXPECT_FALSE(w.localRank);
  EXPECT_EQ(w.localDevice, 2);
}

TEST(WorkerGpusTest, AGpuElsewhereIsSwappedToLocalRank) {
  WorkerGpus w = workerGpus({"0", "1", "2", "3"}, 3, 0, false);
  EXPECT_EQ(w.visible, "3,1,2,0");
  EXPECT_EQ(w.localDevice, 0);
}

TEST(WorkerGpusTest, RanksPastTheListKeepItAndNameTheDevice) {
  WorkerGpus w = workerGpus({"5", "6"}, 1, 3, false);
  EXPECT_FALSE(w.visible);
  EXPECT_EQ(w.localDevice, 1);
}

TEST(WorkerGpusTest, VirtualLocalRankShowsOnlyThePlansGpuAsDeviceZero) {
  WorkerGpus w = workerGpus({"GPU-a", "GPU-b"}, 1, 1, true);
  EXPECT_EQ(w.visible, "GPU-b");
  EXPECT_EQ(w.localRank, 0);
  EXPECT_EQ(w.localDevice, 0);
}

TEST(WorkerGpusTest, NoGpuSetsNothing) {
  WorkerGpus w = workerGpus({}, -1, 0, true);
  EXPECT_FALSE(w.visible);
  EXPECT_EQ(w.localDevice, -1);
}

}  // namespace
}  // namespace distrun::binding
