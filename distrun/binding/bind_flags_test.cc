#include "distrun/binding/bind_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/binding/local_topology.h"
#include "distrun/common/error.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::binding {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string usageError(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "<no UsageError>";
}

// Two sockets of two cores: the first with no GPU, the second with GPU 0.
NodeTopology twoSockets() {
  return readTopologyXml(std::string(DISTRUN_SOURCE_DIR) +
                         "/distrun/binding/testdata/two_sockets_one_gpu.xml");
}

// Two cores, one GPU on each.
NodeTopology twoGpus() {
  return readTopologyXml(std::string(DISTRUN_SOURCE_DIR) +
                         "/distrun/binding/testdata/two_cpus_two_gpus.xml");
}

BindRequest request(int ranks, const CpuList& allowed, const std::string& cpu = "cores") {
  BindRequest r;
  r.ranks = ranks;
  r.allowed = allowed;
  r.cpu = parseCpuBind(cpu);
  return r;
}

TEST(ParseCpuBindTest, ModesAndHexMasks) {
  EXPECT_EQ(parseCpuBind("none").mode, CpuBind::Mode::kNone);
  EXPECT_EQ(parseCpuBind("cores").mode, CpuBind::Mode::kCores);
  EXPECT_EQ(parseCpuBind("numa").mode, CpuBind::Mode::kNuma);
  EXPECT_EQ(parseCpuBind("site").mode, CpuBind::Mode::kSite);
  CpuBind mask = parseCpuBind("mask:0x1,0x6,fe00");
  EXPECT_EQ(mask.mode, CpuBind::Mode::kMask);
  EXPECT_THAT(mask.masks,
              ElementsAre(CpuList{0}, (CpuList{1, 2}), (CpuList{9, 10, 11, 12, 13, 14, 15})));
}

TEST(ParseCpuBindTest, RefusalsNameTheFlag) {
  EXPECT_EQ(usageError([] { parseCpuBind("sockets"); }),
            "--cpu-bind sockets: expected none, cores, numa, site or mask:LIST (hex masks, one "
            "per local rank: mask:0x1,0x2)");
  EXPECT_EQ(usageError([] { parseCpuBind("mask:"); }),
            "--cpu-bind mask:: expected none, cores, numa, site or mask:LIST (hex masks, one per "
            "local rank: mask:0x1,0x2)");
  EXPECT_EQ(usageError([] { parseCpuBind("mask:0x1,0xg"); }),
            "--cpu-bind mask:0x1,0xg: '0xg' is not a hexadecimal CPU mask naming a CPU (0x1 is "
            "CPU 0, 0x6 CPUs 1-2)");
  EXPECT_EQ(usageError([] { parseCpuBind("mask:0x0"); }).substr(0, 33),
            "--cpu-bind mask:0x0: '0x0' is not");
}

TEST(ParseGpuBindTest, ModesAndMaps) {
  EXPECT_EQ(parseGpuBind("none").mode, GpuBind::Mode::kNone);
  EXPECT_EQ(parseGpuBind("closest").mode, GpuBind::Mode::kClosest);
  EXPECT_THAT(parseGpuBind("map:1,0").map, ElementsAre(1, 0));
  EXPECT_EQ(usageError([] { parseGpuBind("nearest"); }),
            "--gpu-bind nearest: expected closest, none or map:LIST (a GPU index per local rank: "
            "map:0,1)");
  EXPECT_EQ(usageError([] { parseGpuBind("map:0,x"); }),
            "--gpu-bind map:0,x: 'x' is not a GPU index (0, 1, ...)");
}

TEST(CheckCpuBindTest, OneMaskPerRankWithinTheAgentsCpus) {
  checkCpuBind(parseCpuBind("mask:0x1,0x2"), 2, {0, 1});
  checkCpuBind(parseCpuBind("cores"), 5, {0});
  EXPECT_EQ(usageError([] {
              checkCpuBind(parseCpuBind("mask:0x1"), 2, {0, 1});
            }),
            "--cpu-bind mask:...: 1 mask for --nproc-per-node 2: give one mask per local rank");
  EXPECT_EQ(usageError([] {
              checkCpuBind(parseCpuBind("mask:0x1,0xc"), 2, {0, 1, 2});
            }),
            "--cpu-bind mask:...: the mask 0xc of local rank 1 names CPU 3 this agent may not "
            "use (it may use 0-2)");
  EXPECT_EQ(usageError([] { checkGpuBindCount(parseGpuBind("map:0"), 2); }),
            "--gpu-bind map:...: 1 GPU index for --nproc-per-node 2: give one per local rank");
}

TEST(BindRanksTest, WithoutGpusTheAllowedCpusSplitEvenly) {
  NodeTopology node = readSyntheticTopology("pack:2 numa:1 core:2 pu:1");
  std::vector<RankBinding> plan = bindRanks(node, request(3, {0, 1, 2, 3}));
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].cpus, (CpuList{0, 1}));
  EXPECT_EQ(plan[1].cpus, (CpuList{2}));
  EXPECT_EQ(plan[2].cpus, (CpuList{3}));
  EXPECT_THAT(plan[2].numa, ElementsAre(1));
  EXPECT_THAT(plan[0].gpus, IsEmpty());
  std::vector<RankBinding> crowded = bindRanks(node, request(3, {0, 1}));
  EXPECT_THAT(crowded[0].cpus, IsEmpty()) << "more ranks than CPUs: no binding, as before";
}

TEST(BindRanksTest, CoresClosestToEachGpuWithinTheAllowedCpus) {
  std::vector<RankBinding> plan = bindRanks(twoGpus(), request(2, {0, 1}));
  EXPECT_EQ(plan[0].cpus, CpuList{0});
  EXPECT_THAT(plan[0].gpus, ElementsAre(0));
  EXPECT_EQ(plan[1].cpus, CpuList{1});
  EXPECT_THAT(plan[1].gpus, ElementsAre(1));
  BindRequest none = request(2, {0, 1}, "none");
  std::vector<RankBinding> unbound = bindRanks(twoGpus(), none);
  EXPECT_THAT(unbound[1].cpus, IsEmpty());
  EXPECT_THAT(unbound[1].gpus, ElementsAre(1)) << "--cpu-bind none keeps the GPUs";
}

TEST(BindRanksTest, NumaGivesEveryAllowedCoreOfTheDomain) {
  BindRequest r = request(2, {0, 1, 2, 3}, "numa");
  r.gpu = parseGpuBind("none");
  std::vector<RankBinding> plan = bindRanks(twoSockets(), r);
  EXPECT_EQ(plan[0].cpus, (CpuList{0, 1}));
  EXPECT_EQ(plan[1].cpus, (CpuList{2, 3}));
  r.allowed = {0, 1, 2};
  EXPECT_EQ(bindRanks(twoSockets(), r)[1].cpus, (CpuList{2})) << "CPU 3 is not allowed";
}

TEST(BindRanksTest, GpuBindNoneAndMap) {
  BindRequest r = request(2, {0, 1});
  r.gpu = parseGpuBind("none");
  EXPECT_THAT(bindRanks(twoGpus(), r)[0].gpus, IsEmpty());
  r.gpu = parseGpuBind("map:1,1");
  std::vector<RankBinding> plan = bindRanks(twoGpus(), r);
  EXPECT_THAT(plan[0].gpus, ElementsAre(1));
  EXPECT_EQ(plan[0].device, 1);
  EXPECT_EQ(plan[0].cpus, CpuList{0}) << "the cores do not follow a map";
  r.gpu = parseGpuBind("map:0,2");
  EXPECT_THAT(usageError([&] { bindRanks(twoGpus(), r); }),
              ::testing::StartsWith("--gpu-bind map:...: GPU 2 for local rank 1, but the agent "
                                    "has 2 (0-1, from hwloc XML "));
  r.gpu = parseGpuBind("map:0,0");
  EXPECT_THAT(usageError([&] { bindRanks(readSyntheticTopology("core:2 pu:1"), r); }),
              ::testing::StartsWith("--gpu-bind map:...: this node has no GPU (from hwloc "));
}

TEST(BindRanksTest, DefaultGpusFallBackToAnEvenSplitWhereTheyCannotBeShared) {
  // 3 ranks cannot split GPU 0's 2 cores: the cores split evenly, and every
  // rank still uses GPU 0.
  std::vector<RankBinding> plan = bindRanks(twoSockets(), request(3, {0, 1, 2, 3}));
  EXPECT_EQ(plan[0].cpus, (CpuList{0, 1}));
  EXPECT_THAT(plan[2].gpus, ElementsAre(0));
  EXPECT_EQ(plan[2].device, 0);
  // 3 ranks cannot share 2 GPUs: no GPU in the plan.
  EXPECT_THAT(bindRanks(twoGpus(), request(3, {0, 1}))[0].gpus, IsEmpty());
  BindRequest asked = request(3, {0, 1, 2, 3});
  asked.gpu = parseGpuBind("closest");
  EXPECT_EQ(usageError([&] { bindRanks(twoGpus(), asked); }),
            "--nproc-per-node 3 cannot share 2 GPUs evenly: use at most 2 or a multiple of 2");
}

TEST(BindRanksTest, SiteUsesTheProfilesNodeOrNamesTheProfile) {
  NodeTopology site;
  site.source = "the site profile test.site";
  addTopologyLine(site, "cpus 0-3", "t:1");
  addTopologyLine(site, "numa 0 cpus 0-3", "t:2");
  addTopologyLine(site, "gpu 0 numa 0 cpus 2-3", "t:3");
  BindRequest r = request(1, {0, 1, 2, 3}, "site");
  r.siteName = "test";
  EXPECT_EQ(usageError([&] { bindRanks(twoGpus(), r); }),
            "--cpu-bind site: the site profile test has no `node` lines describing its nodes: "
            "add them (docs/sites.md) or use --cpu-bind cores");
  r.site = &site;
  std::vector<RankBinding> plan = bindRanks(twoGpus(), r);
  EXPECT_EQ(plan[0].cpus, (CpuList{2, 3}));
  EXPECT_THAT(plan[0].gpus, ElementsAre(0));
  r.allowed = {0, 1};
  EXPECT_EQ(usageError([&] { bindRanks(twoGpus(), r); }),
            "--cpu-bind site: local rank 0 is planned on CPUs 2-3 (the site profile test.site) "
            "but this agent may use only 0-1: run on the site's nodes or use --cpu-bind cores");
}

TEST(RankDeviceTest, TheGpuOfEachRankWhateverItsCores) {
  EXPECT_EQ(rankDevice(twoGpus(), 1, 2), 1);
  EXPECT_EQ(rankDevice(twoGpus(), 3, 4), 1);
  EXPECT_EQ(rankDevice(twoGpus(), 0, 1), 0);
  EXPECT_EQ(rankDevice(readSyntheticTopology("core:2 pu:1"), 0, 2), -1);
}

TEST(NodeTopologyVariableTest, ReadsTheXmlItNames) {
  MapEnvironment env(
      {{"DISTRUN_NODE_TOPOLOGY",
        std::string(DISTRUN_SOURCE_DIR) + "/distrun/binding/testdata/two_cpus_two_gpus.xml"}});
  NodeTopology node = readNodeTopology(env, "here");
  EXPECT_EQ(node.gpus.size(), 2u);
  EXPECT_EQ(node.cpus, (CpuList{0, 1}));
  EXPECT_EQ(readNodeTopology(MapEnvironment(), "here").source, "sysfs on here");
}

}  // namespace
}  // namespace distrun::binding
