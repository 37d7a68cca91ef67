#include "distrun/doctor/cgroup_check.h"

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "distrun/common/system.h"
#include "distrun/doctor/checks.h"
#include "distrun/doctor/fake_tree.h"
#include "distrun/doctor/node_facts.h"

namespace distrun::doctor {
namespace {

using testing::FakeTree;

constexpr const char* kStep = "/system.slice/slurmstepd.scope/job_77/step_0/user/task_0";

TEST(ReadCgroupTest, NoProcFileIsNoCgroup) {
  FakeTree tree;
  EXPECT_EQ(readCgroup(tree.root()).version, 0);
}

TEST(ReadCgroupTest, V2TakesTheTightestLimitUpTheTree) {
  FakeTree tree;
  tree.write("/proc/self/cgroup", std::string("0::") + kStep + "\n");
  tree.write("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
  std::string job = "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_77";
  tree.write(job + "/memory.max", "4294967296\n");
  tree.write(job + "/cpu.max", "200000 100000\n");
  tree.write(job + "/step_0/memory.max", "max\n");
  tree.write(job + "/step_0/cpu.max", "max 100000\n");
  tree.write(std::string("/sys/fs/cgroup") + kStep + "/cpuset.cpus.effective", "0-3\n");
  CgroupFacts facts = readCgroup(tree.root());
  EXPECT_EQ(facts.version, 2);
  EXPECT_EQ(facts.path, kStep);
  EXPECT_EQ(facts.cpus, (binding::CpuList{0, 1, 2, 3}));
  ASSERT_TRUE(facts.cpuQuota);
  EXPECT_DOUBLE_EQ(*facts.cpuQuota, 2.0);
  EXPECT_EQ(facts.memoryLimit, 4 * kGiB);
}

TEST(ReadCgroupTest, V2CpusetComesFromTheNearestCgroupThatHasIt) {
  FakeTree tree;
  tree.write("/proc/self/cgroup", "0::/user.slice/session-3.scope\n");
  tree.write("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n");
  tree.write("/sys/fs/cgroup/cpuset.cpus.effective", "0-7\n");
  tree.makeFolder("/sys/fs/cgroup/user.slice/session-3.scope");
  CgroupFacts facts = readCgroup(tree.root());
  EXPECT_EQ(facts.version, 2);
  EXPECT_EQ(facts.cpus, (binding::CpuList{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE(facts.cpuQuota);
  EXPECT_FALSE(facts.memoryLimit);
}

TEST(ReadCgroupTest, V1ReadsEachControllersHierarchy) {
  FakeTree tree;
  std::string step = "/slurm/uid_1000/job_77/step_0";
  tree.write("/proc/self/cgroup", "12:memory:" + step + "\n5:cpu,cpuacct:" + step +
                                      "\n3:cpuset:" + step + "\n1:name=systemd:/\n0::/\n");
  tree.write("/sys/fs/cgroup/memory/slurm/uid_1000/job_77/memory.limit_in_bytes", "2147483648\n");
  tree.write("/sys/fs/cgroup/memory" + step + "/memory.limit_in_bytes", "9223372036854771712\n");
  tree.write("/sys/fs/cgroup/cpu,cpuacct" + step + "/cpu.cfs_quota_us", "-1\n");
  tree.write("/sys/fs/cgroup/cpu,cpuacct" + step + "/cpu.cfs_period_us", "100000\n");
  tree.write("/sys/fs/cgroup/cpuset" + step + "/cpuset.cpus", "0-1\n");
  CgroupFacts facts = readCgroup(tree.root());
  EXPECT_EQ(facts.version, 1);
  EXPECT_EQ(facts.path, step);
  EXPECT_EQ(facts.cpus, (binding::CpuList{0, 1}));
  EXPECT_FALSE(facts.cpuQuota);
  EXPECT_EQ(facts.memoryLimit, 2 * kGiB);
}

TEST(ReadCgroupTest, V1CpuUnderItsOwnNameWhenNotMountedTogether) {
  FakeTree tree;
  tree.write("/proc/self/cgroup", "4:cpu,cpuacct:/job\n");
  tree.write("/sys/fs/cgroup/cpu/job/cpu.cfs_quota_us", "150000\n");
  tree.write("/sys/fs/cgroup/cpu/job/cpu.cfs_period_us", "100000\n");
  CgroupFacts facts = readCgroup(tree.root());
  ASSERT_TRUE(facts.cpuQuota);
  EXPECT_DOUBLE_EQ(*facts.cpuQuota, 1.5);
  EXPECT_FALSE(facts.cpus);
}

TEST(ReadCgroupTest, ThisMachinesCpusetHoldsThisProcesssCpus) {
  CgroupFacts facts = readCgroup("");
  if (!std::filesystem::exists("/proc/self/cgroup")) GTEST_SKIP() << "no /proc/self/cgroup";
  EXPECT_TRUE(facts.version == 1 || facts.version == 2);
  if (!facts.cpus) return;
  for (int cpu : usableCpus()) {
    EXPECT_TRUE(std::binary_search(facts.cpus->begin(), facts.cpus->end(), cpu)) << cpu;
  }
}

TEST(ReadJobRequestTest, MemoryPerNodeOrPerCpu) {
  JobRequest r = readJobRequest(MapEnvironment{
      {"SLURM_JOB_ID", "77"}, {"SLURM_CPUS_ON_NODE", "4"}, {"SLURM_MEM_PER_NODE", "4096"}});
  EXPECT_EQ(r.jobId, "77");
  EXPECT_EQ(r.cpus, 4);
  EXPECT_EQ(r.memoryBytes, 4 * kGiB);
  EXPECT_EQ(r.memorySource, "SLURM_MEM_PER_NODE=4096");
  r = readJobRequest(MapEnvironment{
      {"SLURM_JOB_ID", "77"}, {"SLURM_CPUS_ON_NODE", "4"}, {"SLURM_MEM_PER_CPU", "512"}});
  EXPECT_EQ(r.memoryBytes, 2 * kGiB);
  EXPECT_EQ(r.memorySource, "SLURM_MEM_PER_CPU=512 x 4 CPUs");
}

TEST(ReadJobRequestTest, OutsideAJobOrMalformedAsksNothing) {
  JobRequest r = readJobRequest(MapEnvironment{});
  EXPECT_EQ(r.jobId, "");
  EXPECT_FALSE(r.cpus);
  EXPECT_FALSE(r.memoryBytes);
  r = readJobRequest(MapEnvironment{{"SLURM_CPUS_ON_NODE", "four"}, {"SLURM_MEM_PER_CPU", "512"}});
  EXPECT_FALSE(r.cpus);
  EXPECT_FALSE(r.memoryBytes);  // per CPU without a CPU count
}

CgroupFacts someLimits() {
  CgroupFacts f;
  f.version = 2;
  f.path = "/job_77/step_0";
  f.cpus = binding::CpuList{0, 1, 2, 3};
  f.memoryLimit = 4 * kGiB;
  return f;
}

JobRequest asked(int cpus, uint64_t memory) {
  JobRequest r;
  r.jobId = "77";
  r.cpus = cpus;
  r.memoryBytes = memory;
  r.memorySource = "SLURM_MEM_PER_NODE=" + std::to_string(memory / kMiB);
  return r;
}

TEST(JudgeCgroupTest, NoCgroupSkips) {
  CheckResult r = judgeCgroup(CgroupFacts{}, JobRequest{});
  EXPECT_EQ(r.check, "cgroup");
  EXPECT_EQ(r.state, CheckState::kSkip);
  EXPECT_EQ(r.detail, "no cgroup found (/proc/self/cgroup is missing)");
}

TEST(JudgeCgroupTest, OutsideAJobNamesTheLimitsFound) {
  CgroupFacts f = someLimits();
  f.memoryLimit.reset();
  CheckResult r = judgeCgroup(f, JobRequest{});
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "cgroup v2 /job_77/step_0: cpuset 0-3 (4 CPUs), no CPU quota, no memory limit");
  EXPECT_EQ(r.fix, "");
  EXPECT_EQ(r.values.at("cpuset_cpus"), 4);
  EXPECT_EQ(r.values.count("memory_limit_bytes"), 0u);
  EXPECT_EQ(r.facts.at("cgroup"), "/job_77/step_0");
}

TEST(JudgeCgroupTest, LimitsThatHoldTheRequestPass) {
  CgroupFacts f = someLimits();
  f.cpuQuota = 4.0;
  CheckResult r = judgeCgroup(f, asked(4, 4 * kGiB));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "cgroup v2 /job_77/step_0: cpuset 0-3 (4 CPUs), CPU quota 4 CPUs, memory limit 4.0 "
            "GiB; job 77 asked for 4 CPUs (SLURM_CPUS_ON_NODE) and 4.0 GiB "
            "(SLURM_MEM_PER_NODE=4096) on this node");
  EXPECT_EQ(r.values.at("asked_cpus"), 4);
  EXPECT_EQ(r.values.at("asked_memory_bytes"), static_cast<double>(4 * kGiB));
  EXPECT_EQ(r.values.at("cpu_quota_cpus"), 4);
}

TEST(JudgeCgroupTest, NoLimitAtAllPasses) {
  CgroupFacts f;
  f.version = 1;
  f.path = "/";
  CheckResult r = judgeCgroup(f, asked(2, kGiB));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "cgroup v1 /: no cpuset, no CPU quota, no memory limit; job 77 asked for 2 CPUs "
            "(SLURM_CPUS_ON_NODE) and 1.0 GiB (SLURM_MEM_PER_NODE=1024) on this node");
}

TEST(JudgeCgroupTest, FewerCpusInTheCpusetFail) {
  CheckResult r = judgeCgroup(someLimits(), asked(8, 4 * kGiB));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "cgroup v2 /job_77/step_0: cpuset 0-3 (4 CPUs), no CPU quota, memory limit 4.0 GiB; "
            "job 77 asked for 8 CPUs (SLURM_CPUS_ON_NODE) and 4.0 GiB (SLURM_MEM_PER_NODE=4096) "
            "on this node: the cpuset holds 4 CPUs (0-3) of the 8 asked");
  EXPECT_EQ(r.fix,
            "give the step all of the job's CPUs on the node: srun "
            "--cpus-per-task=$SLURM_CPUS_ON_NODE for one task per node, "
            "--cpus-per-task=$SLURM_CPUS_PER_TASK for one per rank (srun no longer takes "
            "sbatch's since Slurm 22.05); if the job's own cgroup is short, tell the admins "
            "(cgroup.conf)");
}

TEST(JudgeCgroupTest, ASmallerCpuQuotaFails) {
  CgroupFacts f = someLimits();
  f.cpuQuota = 1.5;
  CheckResult r = judgeCgroup(f, asked(4, 4 * kGiB));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_NE(r.detail.find("CPU quota 1.50 CPUs"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find(": the CPU quota allows 1.50 CPUs of the 4 asked"), std::string::npos)
      << r.detail;
  EXPECT_EQ(r.values.at("cpu_quota_cpus"), 1.5);
}

TEST(JudgeCgroupTest, LessMemoryFails) {
  CgroupFacts f = someLimits();
  f.memoryLimit = 2 * kGiB;
  CheckResult r = judgeCgroup(f, asked(4, 4 * kGiB));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_NE(r.detail.find(": the memory limit is 2.0 GiB of the 4.0 GiB asked"), std::string::npos)
      << r.detail;
  EXPECT_EQ(r.fix,
            "give the step the job's memory: srun --mem=0 (all of the job's memory on the node); "
            "if the job's own cgroup is short, tell the admins (cgroup.conf)");
}

TEST(JudgeCgroupTest, EveryShortfallIsNamed) {
  CgroupFacts f = someLimits();
  f.memoryLimit = 2 * kGiB;
  CheckResult r = judgeCgroup(f, asked(8, 4 * kGiB));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_NE(r.detail.find(": the cpuset holds 4 CPUs (0-3) of the 8 asked; the memory limit is "
                          "2.0 GiB of the 4.0 GiB asked"),
            std::string::npos)
      << r.detail;
  EXPECT_NE(r.fix.find("; give the step the job's memory"), std::string::npos) << r.fix;
}

TEST(CheckCgroupTest, RunsOnThisMachine) {
  ProbeContext ctx;
  CheckResult r = checkCgroup(ctx);
  EXPECT_EQ(r.check, "cgroup");
  EXPECT_NE(r.state, CheckState::kFail) << r.detail;  // no Slurm job asks for anything here
}

}  // namespace
}  // namespace distrun::doctor
