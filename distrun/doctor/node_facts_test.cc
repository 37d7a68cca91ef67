#include "distrun/doctor/node_facts.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "distrun/common/system.h"
#include "distrun/doctor/fake_tree.h"

namespace distrun::doctor {
namespace {

using testing::FakeTree;

TEST(FormatBytesTest, UsesTheLargestUnitThatKeepsOneOrMore) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.0 KiB");
  EXPECT_EQ(formatBytes(64 * kKiB), "64.0 KiB");
  EXPECT_EQ(formatBytes(3 * kMiB), "3.0 MiB");
  EXPECT_EQ(formatBytes(kGiB + kGiB / 2), "1.5 GiB");
  EXPECT_EQ(formatBytes(2048 * kGiB), "2.0 TiB");
}

TEST(CountedTest, PluralUnlessOne) {
  EXPECT_EQ(counted(0, "CPU"), "0 CPUs");
  EXPECT_EQ(counted(1, "CPU"), "1 CPU");
  EXPECT_EQ(counted(2, "core"), "2 cores");
}

TEST(CombineTest, NoFindingsIsOk) {
  CheckResult r = combine("x", {});
  EXPECT_EQ(r.check, "x");
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "");
  EXPECT_EQ(r.fix, "");
}

TEST(CombineTest, AllOkJoinsEveryDetail) {
  CheckResult r = combine("x", {{CheckState::kOk, "a", ""}, {CheckState::kOk, "b", ""}});
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "a; b");
  EXPECT_EQ(r.fix, "");
}

TEST(CombineTest, ProblemsLeadWorstFirstAndOkDetailsDrop) {
  CheckResult r = combine("x", {{CheckState::kOk, "fine", ""},
                                {CheckState::kWarn, "meh", "do w"},
                                {CheckState::kFail, "bad", "do f"},
                                {CheckState::kWarn, "meh too", "do w"}});
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "bad; meh; meh too");
  EXPECT_EQ(r.fix, "do f; do w");
}

TEST(RanksPerNodeTest, OptionThenTasksThenGpusThenOne) {
  DoctorOptions options;
  cluster::JobLayout layout;
  RanksPerNode r = ranksPerNode(options, layout, 0);
  EXPECT_EQ(r.ranks, 1);
  EXPECT_EQ(r.source, "default");
  r = ranksPerNode(options, layout, 4);
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.source, "GPUs");
  layout.localWorldSize = 2;
  r = ranksPerNode(options, layout, 4);
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.source, "tasks on this node");
  options.nprocPerNode = 8;
  r = ranksPerNode(options, layout, 4);
  EXPECT_EQ(r.ranks, 8);
  EXPECT_EQ(r.source, "--nproc-per-node");
}

TEST(CpuFactsTest, ThreadsOfOneCoreMapToItsFirstCpu) {
  FakeTree tree;
  tree.write("/sys/devices/system/cpu/online", "0-3\n");
  tree.write("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0,2\n");
  tree.write("/sys/devices/system/cpu/cpu1/topology/thread_siblings_list", "1,3\n");
  tree.write("/sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "0,2\n");
  // cpu3 has no topology folder: it is its own core.
  CpuFacts facts = readCpuFacts(tree.root());
  EXPECT_EQ(facts.online, (binding::CpuList{0, 1, 2, 3}));
  std::vector<std::pair<int, int>> expected = {{0, 0}, {1, 1}, {2, 0}, {3, 3}};
  EXPECT_EQ(facts.coreOf, expected);
  EXPECT_EQ(coresOf({2, 3}, facts), (binding::CpuList{0, 3}));
  EXPECT_EQ(coresOf({0, 2}, facts), (binding::CpuList{0}));
  EXPECT_EQ(coresOf({7}, facts), (binding::CpuList{7}));  // unknown: itself
}

TEST(CpuFactsTest, NoOnlineListGivesNoCpus) {
  FakeTree tree;
  CpuFacts facts = readCpuFacts(tree.root());
  EXPECT_TRUE(facts.online.empty());
  EXPECT_TRUE(facts.coreOf.empty());
}

TEST(CpuFactsTest, ThisMachineListsTheCpusThisProcessMayUse) {
  CpuFacts facts = readCpuFacts("");
  ASSERT_FALSE(facts.online.empty());
  for (int cpu : usableCpus()) {
    EXPECT_TRUE(std::binary_search(facts.online.begin(), facts.online.end(), cpu)) << cpu;
  }
}

TEST(FirstLineTest, TrimsAndStopsAtTheNewline) {
  EXPECT_EQ(firstLine("  \nNVIDIA-SMI has failed\nmore\n"), "NVIDIA-SMI has failed");
  EXPECT_EQ(firstLine(""), "");
}

}  // namespace
}  // namespace distrun::doctor
