#include "distrun/submit/submit_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::submit {
namespace {

cluster::SiteProfile site(const std::string& name) {
  return cluster::loadSiteProfile(name, {std::string(DISTRUN_SOURCE_DIR) + "/share/sites"});
}

SubmitRequest request(std::vector<std::string> command) {
  SubmitRequest r;
  r.command = std::move(command);
  return r;
}

std::string refusal(const SubmitRequest& r, const cluster::SiteProfile* s = nullptr) {
  try {
    planBatchJob(r, s);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(SubmitPlanTest, RunTrainAndBenchStartOneDistrunPerNode) {
  for (const char* command : {"run", "train", "bench"}) {
    SubmitRequest r = request({command, "x"});
    r.nprocPerNode = 4;
    BatchJob job = planBatchJob(r, nullptr);
    EXPECT_EQ(job.tasksPerNode, 1) << command;
    EXPECT_EQ(job.step,
              (std::vector<std::string>{"distrun", command, "--nproc-per-node", "4", "x"}));
    EXPECT_EQ(job.cpuBind, "none");
  }
}

TEST(SubmitPlanTest, ExecStartsOneTaskPerRank) {
  SubmitRequest r = request({"exec", "--", "prog"});
  r.nprocPerNode = 3;
  r.cpusPerTask = 2;
  BatchJob job = planBatchJob(r, nullptr);
  EXPECT_EQ(job.tasksPerNode, 3);
  EXPECT_EQ(job.cpusPerTask, 2);
  EXPECT_EQ(job.cpuBind, "cores");
}

TEST(SubmitPlanTest, RanksPerNodeComeFromTheCommandOrTheSitesGpus) {
  EXPECT_EQ(planBatchJob(request({"train", "--nproc-per-node=2", "linear"}), nullptr).step.size(),
            4u);
  cluster::SiteProfile lumi = site("lumi");
  BatchJob exec = planBatchJob(request({"exec", "--", "prog"}), &lumi);
  EXPECT_EQ(exec.tasksPerNode, 8);
  EXPECT_EQ(exec.cpusPerTask, 7);
  EXPECT_EQ(exec.gpusPerNode, 8);
  EXPECT_EQ(exec.partition, "standard-g");
  EXPECT_THAT(exec.cpuBind, ::testing::StartsWith("mask_cpu:0xfe000000000000,"));
  EXPECT_EQ(exec.step,
            (std::vector<std::string>{"distrun", "exec", "--gpu-bind", "closest", "--", "prog"}));
  EXPECT_TRUE(exec.exclusive);
  SubmitRequest agent = request({"train", "--nproc-per-node", "gpu", "mnist"});
  EXPECT_EQ(planBatchJob(agent, &lumi).step.size(), 5u) << "gpu stays for the agent to decide";
}

TEST(SubmitPlanTest, TheUsersFlagsWinOverTheSitesDefaults) {
  cluster::SiteProfile lumi = site("lumi");
  SubmitRequest r = request({"exec", "--", "prog"});
  r.partition = "small-g";
  r.gpusPerNode = 2;
  BatchJob job = planBatchJob(r, &lumi);
  EXPECT_EQ(job.partition, "small-g");
  EXPECT_EQ(job.tasksPerNode, 2);
  EXPECT_EQ(job.cpuBind, "mask_cpu:0xfe000000000000,0xfe00000000000000");
}

TEST(SubmitPlanTest, MistakesAreUsageErrorsNamingTheFlag) {
  EXPECT_EQ(refusal(request({})),
            "submit: expected a distrun command after -- (run, train, bench, exec or doctor)");
  EXPECT_EQ(refusal(request({"trian", "mnist"})),
            "submit: 'trian' is not a distrun command a batch job runs: expected run, train, "
            "bench, exec or doctor (did you mean train?)");
  SubmitRequest twice = request({"run", "--nproc-per-node", "2", "x.py"});
  twice.nprocPerNode = 4;
  EXPECT_EQ(refusal(twice),
            "submit: --nproc-per-node 4 contradicts the command's --nproc-per-node 2: give it "
            "once");
  SubmitRequest shortJob = request({"train", "mnist"});
  shortJob.time = "2";
  shortJob.signalGrace = 120;
  EXPECT_EQ(refusal(shortJob),
            "submit: --signal-grace 120 s leaves no time to train within --time 2: shorten the "
            "grace or lengthen the limit");
  shortJob.time = "1h";
  EXPECT_THAT(refusal(shortJob), ::testing::StartsWith("--time '1h': expected Slurm's"));
  cluster::SiteProfile mn5 = site("marenostrum5");
  SubmitRequest tooMany = request({"exec", "--", "prog"});
  tooMany.gpusPerNode = 5;
  EXPECT_THAT(refusal(tooMany, &mn5),
              ::testing::StartsWith("--gpus-per-node 5: the node has 4 GPUs (from the site "));
}

// Only a program that takes part in the preemption protocol is warned
// before its limit and requeued; any other runs to its end, as under sbatch.
TEST(SubmitPlanTest, APlainProgramGetsNoWarningAndNoRequeue) {
  SubmitRequest plain = request({"run", "plain.py"});
  plain.time = "1";
  plain.signalGrace = 50;
  BatchJob job = planBatchJob(plain, nullptr);
  EXPECT_EQ(job.signalGrace, 0);
  const std::string script = batchScript(job);
  EXPECT_EQ(script.find("--signal"), std::string::npos) << script;
  EXPECT_EQ(script.find("--requeue"), std::string::npos) << script;
  EXPECT_EQ(script.find("trap"), std::string::npos) << script;
  EXPECT_THAT(script, ::testing::EndsWith("  distrun run --nproc-per-node 1 plain.py\nexit $?\n"));
  EXPECT_EQ(warningNote(plain),
            "submit: note: --signal-grace 50 asks no warning: the program takes no part in "
            "distrun's preemption protocol, so the job runs to its time limit as under plain "
            "sbatch (give --checkpoint-on-warning if it writes a snapshot on SIGUSR1 and exits "
            "79)");
  plain.checkpointOnWarning = true;
  EXPECT_EQ(warningNote(plain), std::nullopt);
  EXPECT_THAT(batchScript(planBatchJob(plain, nullptr)),
              ::testing::HasSubstr("#SBATCH --signal=B:USR1@50\n#SBATCH --requeue\n"));
}

TEST(SubmitPlanTest, TrainIsWarnedAndAShortJobKeepsHalfItsTime) {
  SubmitRequest train = request({"train", "mnist"});
  EXPECT_EQ(planBatchJob(train, nullptr).signalGrace, 120);
  train.time = "00:02:00";  // MareNostrum 5's debug jobs
  EXPECT_EQ(planBatchJob(train, nullptr).signalGrace, 60);
  EXPECT_EQ(warningNote(train), std::nullopt);
  train.signalGrace = 0;  // no grace: no signal, no requeue
  const std::string script = batchScript(planBatchJob(train, nullptr));
  EXPECT_EQ(script.find("--signal"), std::string::npos) << script;
  EXPECT_EQ(script.find("requeue"), std::string::npos) << script;
}

TEST(SubmitPlanTest, AnSbatchArgForWhatSubmitWritesIsRefused) {
  SubmitRequest r = request({"run", "x.py"});
  r.sbatchArgs = {"--nodes=8"};
  EXPECT_EQ(refusal(r),
            "submit: --sbatch-arg=--nodes=8 sets sbatch's --nodes, which the script already "
            "writes from distrun submit's --nodes: give --nodes instead");
  r.sbatchArgs = {"-t 10"};
  EXPECT_EQ(refusal(r),
            "submit: --sbatch-arg=-t 10 sets sbatch's --time, which the script already writes "
            "from distrun submit's --time: give --time instead");
  r.sbatchArgs = {"--signal=USR2@60", "--mem=480G", "--requeue"};  // the program's own
  EXPECT_EQ(refusal(r), "accepted");
  r.checkpointOnWarning = true;
  EXPECT_EQ(refusal(r),
            "submit: --sbatch-arg=--signal=USR2@60 sets sbatch's --signal, which the script "
            "already writes from distrun submit's --signal-grace: give --signal-grace instead");
}

// --doctor: the doctor on every node first, told what the command needs.
TEST(SubmitPlanTest, DoctorRunsFirstWithTheCommandsRanksContainerAndSnapshot) {
  SubmitRequest r = request({"train", "--container", "img.sif", "mnist", "--snapshot", "s.snap"});
  r.nprocPerNode = 4;
  r.doctor = true;
  BatchJob job = planBatchJob(r, nullptr);
  EXPECT_EQ(job.doctorStep,
            (std::vector<std::string>{"distrun", "doctor", "--nproc-per-node", "4", "--container",
                                      "img.sif", "--snapshot", "s.snap", "--python", "none"}));
  const std::string script = batchScript(job);
  const size_t doctor = script.find(
      "srun --nodes=1 --ntasks-per-node=1 --cpus-per-task=\"$SLURM_CPUS_ON_NODE\" "
      "--cpu-bind=none \\\n  distrun doctor --nproc-per-node 4 --container img.sif --snapshot "
      "s.snap --python none || exit $?\n");
  ASSERT_NE(doctor, std::string::npos) << script;
  EXPECT_LT(doctor, script.find("\n  distrun train")) << script;
}

TEST(SubmitPlanTest, WithoutDoctorTheScriptHasNoDoctorStep) {
  BatchJob job = planBatchJob(request({"run", "x.py"}), nullptr);
  EXPECT_TRUE(job.doctorStep.empty());
  EXPECT_EQ(batchScript(job).find("doctor"), std::string::npos);
}

TEST(SubmitPlanTest, DoctorIsACommandABatchJobRunsOnePerNode) {
  SubmitRequest r = request({"doctor", "--min-busbw", "10"});
  r.nodes = 4;
  BatchJob job = planBatchJob(r, nullptr);
  EXPECT_EQ(job.tasksPerNode, 1);
  EXPECT_TRUE(job.taskTakesTheNode);
  EXPECT_EQ(job.step, (std::vector<std::string>{"distrun", "doctor", "--nproc-per-node", "1",
                                                "--min-busbw", "10"}));
}

}  // namespace
}  // namespace distrun::submit
