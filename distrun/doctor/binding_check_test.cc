#include "distrun/doctor/binding_check.h"

#include <sched.h>

#include <thread>

#include <gtest/gtest.h>

#include "distrun/common/system.h"
#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

using binding::CpuList;

CpuList range(int first, int last) {
  CpuList cpus;
  for (int c = first; c <= last; ++c) cpus.push_back(c);
  return cpus;
}

// `cpus` online CPUs; with `threads` 2 the second half are the first
// half's hyperthreads (CPU c + cpus/2 is on core c).
CpuFacts cpuFacts(int cpus, int threads = 1) {
  CpuFacts f;
  f.online = range(0, cpus - 1);
  for (int c = 0; c < cpus; ++c) f.coreOf.emplace_back(c, c % (cpus / threads));
  return f;
}

binding::NodeTopology node(int cores, int gpus) {
  binding::NodeTopology n;
  n.source = "test";
  n.cpus = range(0, cores - 1);
  n.numaNodes = {{0, n.cpus}};
  for (int g = 0; g < gpus; ++g) {
    int each = cores / gpus;
    n.gpus.push_back({g, 0, range(g * each, (g + 1) * each - 1)});
  }
  return n;
}

// One distrun per node that binds its ranks itself.
BindingFacts oneTask(int cores, int gpus, const CpuList& affinity) {
  BindingFacts f;
  f.affinity = affinity;
  f.cpus = cpuFacts(cores);
  f.jobCpus = f.cpus.online;
  f.jobCpusSource = "the online CPUs";
  f.node = node(cores, gpus);
  f.ranks = gpus > 0 ? RanksPerNode{gpus, "GPUs"} : RanksPerNode{1, "default"};
  return f;
}

// srun starting one task per rank, this one local rank `rank` of `ranks`.
BindingFacts perRank(int cores, int gpus, int rank, int ranks, const CpuList& affinity) {
  BindingFacts f = oneTask(cores, gpus, affinity);
  f.jobCpusSource = "the cgroup cpuset";
  f.ranks = {ranks, "tasks on this node"};
  f.localRank = rank;
  f.oneTaskPerRank = true;
  return f;
}

constexpr const char* kOneTaskFix =
    "start one task per node with all of the job's CPUs: srun --ntasks-per-node=1 "
    "--cpus-per-task=$SLURM_CPUS_ON_NODE --cpu-bind=none (distrun submit writes this), with no "
    "taskset or numactl around distrun";

TEST(CpuBindingTest, AnUnreadableNodeSkips) {
  BindingFacts f = oneTask(2, 0, {0, 1});
  f.node.reset();
  f.nodeError = "hwloc_topology_load failed";
  CheckResult r = judgeCpuBinding(f);
  EXPECT_EQ(r.check, "cpu-binding");
  EXPECT_EQ(r.state, CheckState::kSkip);
  EXPECT_EQ(r.detail, "cannot read the node to plan on: hwloc_topology_load failed");
}

TEST(CpuBindingTest, OneTaskHoldingEveryCorePasses) {
  CheckResult r = judgeCpuBinding(oneTask(2, 0, {0, 1}));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "the task may use CPUs 0-1: every core of the plan for 1 rank per node, cores 0-1");
  EXPECT_EQ(r.fix, "");
  EXPECT_EQ(r.values.at("task_cpus"), 2);
  EXPECT_EQ(r.values.at("plan_cores"), 2);
  EXPECT_EQ(r.facts.at("task_cpus"), "0-1");
  EXPECT_EQ(r.facts.at("plan_cores"), "0-1");
}

TEST(CpuBindingTest, OneTaskPinnedToOneCoreFails) {
  // `taskset -c 1 distrun doctor` on a node of two cores.
  CheckResult r = judgeCpuBinding(oneTask(2, 0, {1}));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "the task may use CPUs 1 but the plan for 1 rank per node wants cores 0-1 (of the "
            "online CPUs 0-1): it lacks 0");
  EXPECT_EQ(r.fix, kOneTaskFix);
  EXPECT_EQ(r.values.at("task_cpus"), 1);
}

TEST(CpuBindingTest, OneTaskOnAGpuNodeNeedsEveryRanksCores) {
  CheckResult r = judgeCpuBinding(oneTask(8, 2, range(0, 7)));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "the task may use CPUs 0-7: every core of the plan for 2 ranks per node (one per "
            "GPU), cores 0-7");
  r = judgeCpuBinding(oneTask(8, 2, range(0, 3)));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "the task may use CPUs 0-3 but the plan for 2 ranks per node (one per GPU) wants "
            "cores 0-7 (of the online CPUs 0-7): it lacks 4-7");
}

TEST(CpuBindingTest, ATaskPerRankOnItsCoresPasses) {
  CheckResult r = judgeCpuBinding(perRank(8, 2, 1, 2, range(4, 7)));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "local rank 1 may use CPUs 4-7: its cores of the plan for 2 ranks per node (the "
            "step's tasks on this node), cores 4-7");
}

TEST(CpuBindingTest, ATaskPerRankOnAnotherRanksCoresFails) {
  CheckResult r = judgeCpuBinding(perRank(8, 2, 1, 2, range(0, 3)));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "local rank 1 may use CPUs 0-3 but the plan for 2 ranks per node (the step's tasks "
            "on this node) gives it cores 4-7 (of the cgroup cpuset 0-7): it lacks 4-7");
  EXPECT_EQ(r.fix,
            "bind each task to its rank's cores: srun --cpu-bind=mask_cpu:0xf,0xf0 (distrun "
            "submit -- exec writes it)");
}

TEST(CpuBindingTest, ATaskPerRankFreeToRoamWarns) {
  CheckResult r = judgeCpuBinding(perRank(8, 0, 1, 2, range(0, 7)));
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "local rank 1 may use CPUs 0-7, more than its cores 4-7 in the plan for 2 ranks per "
            "node (the step's tasks on this node): its threads can run on other ranks' cores");
  EXPECT_EQ(r.fix,
            "bind each task to its rank's cores: srun --cpu-bind=mask_cpu:0xf,0xf0 (distrun "
            "submit -- exec writes it)");
}

TEST(CpuBindingTest, BothHardwareThreadsOfACoreCountAsTheCore) {
  BindingFacts f = perRank(8, 0, 1, 2, {4, 5, 6, 7, 12, 13, 14, 15});
  f.cpus = cpuFacts(16, 2);
  f.jobCpus = range(0, 15);
  CheckResult r = judgeCpuBinding(f);
  EXPECT_EQ(r.state, CheckState::kOk) << r.detail;
  EXPECT_EQ(r.facts.at("task_cpus"), "4-7,12-15");
  EXPECT_EQ(r.facts.at("plan_cores"), "4-7");
}

TEST(CpuBindingTest, TheJobsCpusetNarrowsThePlan) {
  BindingFacts f = oneTask(4, 0, {2, 3});
  f.jobCpus = {2, 3};
  f.jobCpusSource = "the cgroup cpuset";
  CheckResult r = judgeCpuBinding(f);
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "the task may use CPUs 2-3: every core of the plan for 1 rank per node, cores 2-3");
}

TEST(CpuBindingTest, RanksOutnumberingTheCoresWarn) {
  BindingFacts f = oneTask(2, 0, {0, 1});
  f.ranks = {4, "--nproc-per-node"};
  CheckResult r = judgeCpuBinding(f);
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "4 ranks per node (--nproc-per-node) outnumber the job's 2 cores on this node (0-1): "
            "ranks share cores");
  EXPECT_EQ(r.fix, "run fewer ranks per node (--nproc-per-node) or ask for more CPUs per node");
}

TEST(CpuBindingTest, ALocalRankBeyondThePlanSkips) {
  BindingFacts f = perRank(8, 0, 3, 4, range(6, 7));
  f.ranks = {2, "--nproc-per-node"};
  CheckResult r = judgeCpuBinding(f);
  EXPECT_EQ(r.state, CheckState::kSkip);
  EXPECT_EQ(r.detail, "local rank 3 is outside the plan for 2 ranks per node (--nproc-per-node)");
}

TEST(CpuBindingTest, WithoutACgroupOnlyTheCountsAreCompared) {
  // Slurm gave the job 1 CPU of this node's 2, and no cgroup says which.
  BindingFacts f = oneTask(2, 0, {0});
  f.slurmCpusOnNode = 1;
  CheckResult r = judgeCpuBinding(f);
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "the task may use 1 CPU (0); the job has 1 CPU on this node (SLURM_CPUS_ON_NODE; no "
            "cgroup says which)");
  EXPECT_EQ(r.values.at("job_cpus"), 1);
  f = oneTask(4, 0, {1});
  f.slurmCpusOnNode = 2;
  r = judgeCpuBinding(f);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "the task may use 1 CPU (1); the job has 2 CPUs on this node (SLURM_CPUS_ON_NODE; no "
            "cgroup says which)");
  EXPECT_EQ(r.fix, kOneTaskFix);
}

TEST(CpuBindingTest, WithoutACgroupEachRankNeedsItsShareOfTheCount) {
  BindingFacts f = perRank(8, 0, 0, 2, {3});
  f.slurmCpusOnNode = 4;
  CheckResult r = judgeCpuBinding(f);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "local rank 0 may use 1 CPU (3); the job has 4 CPUs on this node (SLURM_CPUS_ON_NODE; "
            "no cgroup says which), 2 per rank for 2 ranks per node (the step's tasks on this "
            "node)");
  EXPECT_EQ(r.fix, "give each task its share: srun --cpus-per-task=2 --cpu-bind=cores");
  f.affinity = {2, 3};
  EXPECT_EQ(judgeCpuBinding(f).state, CheckState::kOk);
}

TEST(CpuBindingTest, ASlurmCountMatchingTheCpusetComparesCores) {
  BindingFacts f = oneTask(2, 0, {1});
  f.slurmCpusOnNode = 2;
  EXPECT_EQ(judgeCpuBinding(f).state, CheckState::kFail);
}

TEST(ReadBindingFactsTest, PlansOnTheSiteProfilesNode) {
  ProbeContext ctx;
  ctx.site = cluster::SiteProfile{};
  ctx.site->name = "test";
  ctx.site->node = node(8, 4);
  ctx.layout.localWorldSize = 4;
  ctx.layout.localRank = 2;
  ctx.env.set("SLURM_CPUS_ON_NODE", "8");
  BindingFacts f = readBindingFacts(ctx, "");
  ASSERT_TRUE(f.node);
  EXPECT_EQ(f.node->source, "test");
  EXPECT_EQ(f.ranks.ranks, 4);
  EXPECT_EQ(f.ranks.source, "tasks on this node");
  EXPECT_TRUE(f.oneTaskPerRank);
  EXPECT_EQ(f.localRank, 2);
  EXPECT_EQ(f.slurmCpusOnNode, 8);
  EXPECT_EQ(f.affinity, usableCpus());
  EXPECT_FALSE(f.jobCpus.empty());
}

TEST(ReadBindingFactsTest, ReadsThisNodeWithHwlocWithoutASiteNode) {
  BindingFacts f = readBindingFacts(ProbeContext{}, "");
  ASSERT_TRUE(f.node) << f.nodeError;
  EXPECT_FALSE(f.node->cpus.empty());
  EXPECT_FALSE(f.oneTaskPerRank);
}

CheckResult checkOnCpus(const CpuList& cpus) {
  CheckResult result;
  std::thread pinned([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) CPU_SET(cpu, &set);
    ASSERT_EQ(::sched_setaffinity(0, sizeof(set), &set), 0);  // this thread only
    result = checkCpuBinding(ProbeContext{});
  });
  pinned.join();
  return result;
}

TEST(CheckCpuBindingTest, ThisProcessWithEveryCpuPasses) {
  CpuFacts cpus = readCpuFacts("");
  if (usableCpus() != cpus.online) GTEST_SKIP() << "the tests run with a narrowed affinity";
  CheckResult r = checkOnCpus(cpus.online);
  EXPECT_EQ(r.state, CheckState::kOk) << r.detail;
}

TEST(CheckCpuBindingTest, ATaskPinnedToOneCpuFails) {
  CpuFacts cpus = readCpuFacts("");
  if (usableCpus() != cpus.online || cpus.online.size() < 2) {
    GTEST_SKIP() << "needs two CPUs and the whole machine";
  }
  CheckResult r = checkOnCpus({cpus.online.back()});
  EXPECT_EQ(r.state, CheckState::kFail) << r.detail;
  EXPECT_EQ(
      r.detail.rfind("the task may use CPUs " + std::to_string(cpus.online.back()) + " but ", 0),
      0u)
      << r.detail;
}

}  // namespace
}  // namespace distrun::doctor
