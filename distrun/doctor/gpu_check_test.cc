#include "distrun/doctor/gpu_check.h"

#include <gtest/gtest.h>

#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

GpuDevice a100(int index) {
  return {index, "GPU-" + std::to_string(index), "NVIDIA A100-SXM4-80GB", 3.0, 81920.0};
}

// A healthy node of 4 A100s, nobody on them, outside any job.
GpuFacts healthy() {
  GpuFacts f;
  f.vendor = GpuVendor::kNvidia;
  f.deviceFiles = {"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"};
  f.tool = "nvidia-smi";
  f.limit = std::chrono::seconds(20);
  f.listing = ToolResult{0, "", ""};
  f.processList = ToolResult{0, "", ""};
  for (int g = 0; g < 4; ++g) f.gpus.push_back(a100(g));
  f.topologyGpus = 4;
  f.ranks = {4, "GPUs"};
  return f;
}

// Local rank `rank` of 4 tasks on the node, in job 77, seeing `visible`.
GpuFacts rankOf(int rank, const std::vector<std::string>& visible) {
  GpuFacts f = healthy();
  f.jobId = "77";
  f.oneTaskPerRank = true;
  f.localRank = rank;
  f.ranks = {4, "tasks on this node"};
  f.planGpu = rank;
  f.visibleDevices = visible;
  f.visibleVariable = "CUDA_VISIBLE_DEVICES";
  return f;
}

GpuProcess on(int gpu, long pid, const std::string& name, double mib) {
  return {"GPU-" + std::to_string(gpu), pid, name, mib};
}

constexpr const char* kPlanFix =
    "give every task the node's GPUs (srun --gpus-per-node=N, not --gpus-per-task) and let "
    "distrun make the plan's GPU cuda:LOCAL_RANK: distrun exec --gpu-bind closest";

TEST(GpuCheckTest, ANodeWithoutGpusSkips) {
  CheckResult r = judgeGpus(GpuFacts{});
  EXPECT_EQ(r.check, "gpu");
  EXPECT_EQ(r.state, CheckState::kSkip);
  EXPECT_EQ(r.detail, "no GPU on this node (no /dev/nvidia0, no /dev/kfd)");
}

TEST(GpuCheckTest, AMissingToolWarns) {
  GpuFacts f = healthy();
  f.listing = ToolResult{127, "", "timeout: failed to run command 'nvidia-smi'"};
  f.gpus.clear();
  CheckResult r = judgeGpus(f);
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "nvidia-smi is not on PATH; the node has /dev/nvidia0, /dev/nvidia1, /dev/nvidia2, "
            "/dev/nvidia3");
  EXPECT_EQ(r.fix,
            "put nvidia-smi on PATH (module load cuda or rocm) so that doctor can ask the GPUs");
}

TEST(GpuCheckTest, AToolThatHangsFails) {
  GpuFacts f = healthy();
  f.listing = ToolResult{137, "", "", true};
  f.gpus.clear();
  CheckResult r = judgeGpus(f);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "nvidia-smi did not answer within 20 s");
  EXPECT_EQ(r.fix,
            "the GPU or its driver hangs: leave this node out (sbatch --exclude) and tell the "
            "admins");
  f.listing->exitCode = 0;  // the tool ended, but what it started outlived the limit
  EXPECT_EQ(judgeGpus(f).detail, "nvidia-smi did not answer within 20 s");
}

TEST(GpuCheckTest, ADriverThatCannotReachTheGpusFails) {
  GpuFacts f = healthy();
  f.deviceFiles = {"/dev/nvidia0"};
  f.listing = ToolResult{9,
                         "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                         "driver. Make sure that the latest NVIDIA driver is installed and "
                         "running.\n",
                         ""};
  f.gpus.clear();
  CheckResult r = judgeGpus(f);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "nvidia-smi lists no GPU (exit 9: NVIDIA-SMI has failed because it couldn't "
            "communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is "
            "installed and running.); the node has /dev/nvidia0");
  EXPECT_EQ(r.fix,
            "the driver cannot reach the GPUs: leave this node out (sbatch --exclude) and tell "
            "the admins");
}

TEST(GpuCheckTest, AHealthyNodePasses) {
  CheckResult r = judgeGpus(healthy());
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "4 GPUs answer nvidia-smi (NVIDIA A100-SXM4-80GB); no visibility variable: the task "
            "sees every GPU; no other process holds them");
  EXPECT_EQ(r.fix, "");
  EXPECT_EQ(r.values.at("gpus"), 4);
  EXPECT_EQ(r.values.at("foreign_processes"), 0);
  EXPECT_EQ(r.facts.at("tool"), "nvidia-smi");
}

TEST(GpuCheckTest, ARankWhoseLocalRankDeviceIsItsPlannedGpuPasses) {
  CheckResult r = judgeGpus(rankOf(1, {"0", "1", "2", "3"}));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "4 GPUs answer nvidia-smi (NVIDIA A100-SXM4-80GB); CUDA_VISIBLE_DEVICES=0,1,2,3: "
            "cuda:1 (LOCAL_RANK) is GPU 1, local rank 1's in the plan; no other process holds "
            "them");
  EXPECT_EQ(r.facts.at("visible_devices"), "0,1,2,3");
  // distrun's reordering for map:LIST puts the plan's GPU at LOCAL_RANK.
  EXPECT_EQ(judgeGpus(rankOf(1, {"0", "1", "3", "2"})).state, CheckState::kOk);
}

TEST(GpuCheckTest, ATaskNarrowedToOneGpuLeavesCudaLocalRankInvalid) {
  CheckResult r = judgeGpus(rankOf(1, {"1"}));
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "CUDA_VISIBLE_DEVICES=1 shows local rank 1 1 GPU: cuda:1 (cuda:LOCAL_RANK) is not a "
            "device it sees, and scripts written for torchrun fail with 'invalid device ordinal' "
            "(cuda:DISTRUN_LOCAL_DEVICE works)");
  EXPECT_EQ(r.fix, kPlanFix);
}

TEST(GpuCheckTest, ARankWithoutAVisibilityVariableIsToldItsPlannedGpu) {
  CheckResult r = judgeGpus(rankOf(2, {}));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_NE(r.detail.find("no visibility variable: the task sees every GPU (local rank 2's in "
                          "the plan: GPU 2)"),
            std::string::npos)
      << r.detail;
}

TEST(GpuCheckTest, ARankWhoseLocalRankDeviceIsAnotherGpuWarns) {
  CheckResult r = judgeGpus(rankOf(1, {"1", "0", "2", "3"}));
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "CUDA_VISIBLE_DEVICES=1,0,2,3: cuda:1 (LOCAL_RANK) is GPU 0 but the plan gives local "
            "rank 1 GPU 1, the closest to its cores");
  EXPECT_EQ(r.fix, kPlanFix);
}

TEST(GpuCheckTest, RenumberedDevicesAreCheckedForLocalRankOnly) {
  // A device cgroup left this task 2 GPUs, renumbered from 0.
  GpuFacts f = rankOf(1, {"0", "1"});
  f.gpus = {a100(0), a100(1)};
  EXPECT_EQ(judgeGpus(f).state, CheckState::kOk);
  f.visibleDevices = {"0"};
  EXPECT_EQ(judgeGpus(f).state, CheckState::kWarn);
}

TEST(GpuCheckTest, AVisibleIndexBeyondTheGpusFails) {
  CheckResult r = judgeGpus(rankOf(1, {"5"}));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "CUDA_VISIBLE_DEVICES=5 names GPU 5 but the task reaches 4 GPUs");
  EXPECT_EQ(r.fix,
            "set CUDA_VISIBLE_DEVICES to GPUs below 4, or leave it to Slurm (srun "
            "--gpus-per-node)");
}

TEST(GpuCheckTest, SlurmsPhysicalIdsAreNotIndices) {
  GpuFacts f = rankOf(1, {"5"});
  f.visibleVariable = "SLURM_STEP_GPUS";
  f.planGpu.reset();
  f.oneTaskPerRank = false;
  EXPECT_EQ(judgeGpus(f).state, CheckState::kOk);
}

TEST(GpuCheckTest, UuidsAreNotComparedWithThePlan) {
  CheckResult r = judgeGpus(rankOf(1, {"GPU-7d1f2e40-9b5c-4e71-b2a6-0c3d8e9f1a22"}));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_NE(r.detail.find("CUDA_VISIBLE_DEVICES=GPU-7d1f2e40-9b5c-4e71-b2a6-0c3d8e9f1a22 (ids, "
                          "not compared with the plan)"),
            std::string::npos)
      << r.detail;
}

TEST(GpuCheckTest, MoreRanksThanVisibleGpusWarns) {
  GpuFacts f = healthy();
  f.visibleDevices = {"0"};
  f.visibleVariable = "CUDA_VISIBLE_DEVICES";
  f.ranks = {4, "--nproc-per-node"};
  CheckResult r = judgeGpus(f);
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "CUDA_VISIBLE_DEVICES=0 shows 1 GPU to 4 ranks per node (--nproc-per-node): ranks "
            "share GPUs");
  EXPECT_EQ(r.fix, "give the task one GPU per rank (srun --gpus-per-node=N) or run fewer ranks");
}

TEST(GpuCheckTest, ProcessesOfThisJobAreNotForeign) {
  GpuFacts f = rankOf(2, {"1", "3", "2"});
  f.processes = {on(2, 48213, "/usr/bin/python3", 40120)};
  f.processCgroups[48213] = "0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_2\n";
  CheckResult r = judgeGpus(f);
  EXPECT_EQ(r.state, CheckState::kOk) << r.detail;
  EXPECT_EQ(r.values.at("foreign_processes"), 0);
}

TEST(GpuCheckTest, AnotherJobsProcessOnTheTasksGpuFails) {
  GpuFacts f = rankOf(2, {"1", "3", "2"});
  f.processes = {on(2, 48213, "/usr/bin/python3", 40120)};
  f.processCgroups[48213] = "12:memory:/slurm/uid_1000/job_770/step_0\n";  // not job 77
  CheckResult r = judgeGpus(f);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "pid 48213 (/usr/bin/python3, 40120 MiB on GPU 2) holds the task's GPUs, not of job "
            "77");
  EXPECT_EQ(r.fix,
            "another job's or a stale process holds them: leave this node out (sbatch "
            "--exclude) and tell the admins");
  EXPECT_EQ(r.values.at("foreign_processes"), 1);
  EXPECT_EQ(r.values.at("foreign_memory_mib"), 40120);
}

TEST(GpuCheckTest, AProcessWhoseCgroupCannotBeReadIsForeign) {
  GpuFacts f = rankOf(2, {"1", "3", "2"});
  f.processes = {on(2, 48213, "python3", 512)};
  f.processCgroups[48213] = std::nullopt;
  EXPECT_EQ(judgeGpus(f).state, CheckState::kFail);
}

TEST(GpuCheckTest, ProcessesOnOtherGpusDoNotMatter) {
  GpuFacts f = rankOf(2, {"1", "3", "2"});
  f.processes = {on(0, 48213, "python3", 512)};
  EXPECT_EQ(judgeGpus(f).state, CheckState::kOk);
}

TEST(GpuCheckTest, OutsideAJobProcessesWarnAndAreCounted) {
  GpuFacts f = healthy();
  for (long pid = 100; pid < 105; ++pid) f.processes.push_back(on(0, pid, "python3", 100));
  f.processes[4].usedMiB.reset();
  CheckResult r = judgeGpus(f);
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "pid 100 (python3, 100 MiB on GPU 0), pid 101 (python3, 100 MiB on GPU 0), pid 102 "
            "(python3, 100 MiB on GPU 0) and 2 more hold the GPUs");
  EXPECT_EQ(r.fix, "stop them, or choose free GPUs with CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(r.values.at("foreign_processes"), 5);
  EXPECT_EQ(r.values.at("foreign_memory_mib"), 400);
}

TEST(GpuCheckTest, AProcessListThatFailsWarns) {
  GpuFacts f = healthy();
  f.processList = ToolResult{2, "", "Failed to initialize NVML: Unknown Error\n"};
  CheckResult r = judgeGpus(f);
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "nvidia-smi cannot list the GPUs' processes: exit 2: Failed to initialize NVML: "
            "Unknown Error");
  EXPECT_EQ(r.fix, "run nvidia-smi on the node to see why");
  f.processList = ToolResult{137, "", "", true};
  EXPECT_EQ(judgeGpus(f).detail,
            "nvidia-smi cannot list the GPUs' processes: did not answer within 20 s");
}

TEST(GpuCheckTest, AmdProcessesCountOnEveryGpu) {
  GpuFacts f = healthy();
  f.vendor = GpuVendor::kAmd;
  f.tool = "rocm-smi";
  f.gpus = {{0, "0000:C1:00.0", "AMD INSTINCT MI250X", std::nullopt, 65520.0},
            {1, "0000:C6:00.0", "AMD INSTINCT MI250X", std::nullopt, 65520.0}};
  f.topologyGpus = 2;
  f.jobId = "77";
  f.processes = {{"", 48213, "python3", 40960.0}};
  CheckResult r = judgeGpus(f);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "pid 48213 (python3, 40960 MiB) holds the task's GPUs, not of job 77");
}

TEST(GpuCheckTest, APlanThatCannotBeMadeIsSaid) {
  GpuFacts f = healthy();
  f.planNote = "--nproc-per-node 3 cannot share 4 GPUs evenly: use a divisor or a multiple of 4";
  CheckResult r = judgeGpus(f);
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_NE(r.detail.find("; no plan: --nproc-per-node 3 cannot share 4 GPUs evenly"),
            std::string::npos)
      << r.detail;
}

}  // namespace
}  // namespace distrun::doctor
