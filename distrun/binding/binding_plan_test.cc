#include "distrun/binding/binding_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cluster/site_profile.h"
#include "distrun/common/error.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::binding {
namespace {

NodeTopology siteNode(const std::string& site) {
  cluster::SiteProfile profile =
      cluster::loadSiteProfile(site, {std::string(DISTRUN_SOURCE_DIR) + "/share/sites"});
  EXPECT_TRUE(profile.node.has_value()) << site;
  return profile.node.value_or(NodeTopology{});
}

std::vector<int> gpusOf(const std::vector<RankBinding>& plan) {
  std::vector<int> gpus;
  for (const RankBinding& b : plan) gpus.insert(gpus.end(), b.gpus.begin(), b.gpus.end());
  return gpus;
}

// LUMI's published masks for 8 tasks per node, task i on GCD i.
TEST(BindingPlanTest, LumiEightRanksGiveThePublishedMasksAndGcds) {
  std::vector<RankBinding> plan = planBinding(siteNode("lumi"), {.ranksPerNode = 8});
  EXPECT_EQ(srunCpuBind(plan),
            "mask_cpu:0xfe000000000000,0xfe00000000000000,0xfe0000,0xfe000000,0xfe,0xfe00,"
            "0xfe00000000,0xfe0000000000");
  EXPECT_EQ(gpusOf(plan), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  std::vector<int> numa;
  for (const RankBinding& b : plan) numa.insert(numa.end(), b.numa.begin(), b.numa.end());
  EXPECT_EQ(numa, (std::vector<int>{3, 3, 1, 1, 0, 0, 2, 2}));
}

// torchrun's contract: local rank r uses cuda:r. The GCDs no LOCAL_RANK
// names leave their cores to the ranks in turn (GCD 4's CCD to rank 0).
TEST(BindingPlanTest, LumiFourRanksTakeGcdsZeroToThreeAndTheLeftOverCcdsInTurn) {
  std::vector<RankBinding> plan = planBinding(siteNode("lumi"), {.ranksPerNode = 4});
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(gpusOf(plan), (std::vector<int>{0, 1, 2, 3}));
  for (const RankBinding& b : plan) EXPECT_EQ(b.device, b.localRank);
  EXPECT_EQ(formatCpuList(plan[0].cpus), "1-7,49-55");
  EXPECT_EQ(formatCpuList(plan[2].cpus), "17-23,33-39");
}

TEST(BindingPlanTest, ThreeRanksOnEightGcdsEachHaveTheirOwn) {
  std::vector<RankBinding> plan = planBinding(siteNode("lumi"), {.ranksPerNode = 3});
  EXPECT_EQ(gpusOf(plan), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(plan[2].device, 2);
}

TEST(BindingPlanTest, LumiSixteenRanksShareEachGcdsCores) {
  std::vector<RankBinding> plan = planBinding(siteNode("lumi"), {.ranksPerNode = 16});
  EXPECT_EQ(formatCpuList(plan[0].cpus), "49-52");
  EXPECT_EQ(formatCpuList(plan[1].cpus), "53-55");
  EXPECT_EQ(plan[1].gpus, (std::vector<int>{0}));
  EXPECT_EQ(plan[2].gpus, (std::vector<int>{1}));
}

TEST(BindingPlanTest, MareNostrum5GivesTwentyCoresPerGpuOnItsSocket) {
  std::vector<RankBinding> plan = planBinding(siteNode("marenostrum5"), {.ranksPerNode = 4});
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(formatCpuList(plan[0].cpus), "0-19");
  EXPECT_EQ(formatCpuList(plan[3].cpus), "60-79");
  EXPECT_EQ(plan[1].numa, (std::vector<int>{0}));
  EXPECT_EQ(plan[2].numa, (std::vector<int>{1}));
  EXPECT_EQ(gpusOf(plan), (std::vector<int>{0, 1, 2, 3}));
}

TEST(BindingPlanTest, OneRankPerNodeUsesGpuZeroAndKeepsEveryUsableCore) {
  std::vector<RankBinding> plan = planBinding(siteNode("lumi"), {.ranksPerNode = 1});
  EXPECT_EQ(plan[0].gpus, (std::vector<int>{0}));
  EXPECT_EQ(plan[0].device, 0);
  EXPECT_EQ(plan[0].cpus.size(), 56u);
  EXPECT_EQ(plan[0].numa, (std::vector<int>{0, 1, 2, 3}));
}

TEST(BindingPlanTest, CpusPerTaskKeepsTheFirstCoresOfEachShare) {
  std::vector<RankBinding> plan =
      planBinding(siteNode("marenostrum5"), {.ranksPerNode = 4, .cpusPerRank = 8});
  EXPECT_EQ(formatCpuList(plan[1].cpus), "20-27");
}

TEST(BindingPlanTest, WithoutGpusTheUsableCoresSplitEvenly) {
  NodeTopology node;
  node.source = "test";
  node.cpus = {0, 1, 2, 3, 4, 5, 6};
  node.numaNodes = {{0, {0, 1, 2, 3, 4, 5, 6}}};
  std::vector<RankBinding> plan = planBinding(node, {.ranksPerNode = 3});
  EXPECT_EQ(formatCpuList(plan[0].cpus), "0-2");
  EXPECT_EQ(formatCpuList(plan[2].cpus), "5-6");
  EXPECT_TRUE(plan[0].gpus.empty());
  EXPECT_EQ(planBinding(siteNode("lumi"), {.ranksPerNode = 2, .gpusPerNode = 0})[1].cpus.size(),
            28u);
}

std::string refusal(const std::string& site, const PlanRequest& request) {
  try {
    planBinding(siteNode(site), request);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(BindingPlanTest, WhatTheNodeCannotHoldIsAUsageErrorNamingTheFlag) {
  std::string from =
      " (from the site profile " + std::string(DISTRUN_SOURCE_DIR) + "/share/sites/lumi.site)";
  EXPECT_EQ(refusal("lumi", {.ranksPerNode = 8, .gpusPerNode = 9}),
            "--gpus-per-node 9: the node has 8 GPUs" + from);
  EXPECT_EQ(refusal("lumi", {.ranksPerNode = 12}),
            "--nproc-per-node 12 cannot share 8 GPUs evenly: use at most 8 or a multiple of 8");
  EXPECT_EQ(refusal("lumi", {.ranksPerNode = 8, .cpusPerRank = 8}),
            "--cpus-per-task 8: local rank 0 has 7 usable cores (49-55) of the node's 56" + from);
  EXPECT_EQ(refusal("lumi", {.ranksPerNode = 128}),
            "--nproc-per-node 128: more ranks than the 56 usable cores near its GPUs" + from);
}

TEST(BindingPlanTest, TheTableListsEveryRankOfEveryNode) {
  std::vector<RankBinding> plan = planBinding(siteNode("marenostrum5"), {.ranksPerNode = 2});
  std::string table = formatPlanTable(plan, {"gs01r1b01", "gs01r1b02"});
  EXPECT_THAT(table, ::testing::StartsWith("rank   node         cores            mask"));
  // Two ranks use GPUs 0 and 1 (cuda:LOCAL_RANK); GPUs 2 and 3 leave them
  // their cores, on the other socket.
  EXPECT_THAT(table, ::testing::HasSubstr("\n3      gs01r1b02    20-39,60-79      "
                                          "0xfffff00000fffff00000 1     cuda:1  0,1\n"));
}

// More ranks than cores: nobody is bound, and the table says so rather
// than showing a mask of 0x0.
TEST(BindingPlanTest, AnUnboundRankShowsNoMask) {
  std::string table = formatPlanTable({RankBinding{0, {}, {}, {}}}, {"vm"});
  EXPECT_THAT(table, ::testing::HasSubstr("\n0      vm           any              - (not bound)"));
  EXPECT_THAT(table, ::testing::Not(::testing::HasSubstr("0x0")));
}

}  // namespace
}  // namespace distrun::binding
