// `distrun submit` against the local Slurm cluster: real sbatch, the batch
// script on real nodes, --wait following it with squeue and scontrol.
#include <signal.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/testing/slurm_fixture.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;

class SubmitTest : public SlurmTest {
 protected:
  void SetUp() override {
    SlurmTest::SetUp();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("submit-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `VARIABLES distrun submit --wait ARGS`, run from the test's folder.
  CommandResult submitAndWait(const std::string& args, const std::string& variables = "") {
    return runCommand("cd " + quote(dir_.string()) + " && " + cluster_->env() + variables +
                      " timeout 300 " + distrun() + " submit --wait --output " +
                      quote((dir_ / "%j.out").string()) + " " + args);
  }

  std::filesystem::path dir_;
};

TEST_F(SubmitTest, TrainOnTwoNodesRunsToTheEndAndExitsZero) {
  CommandResult r = submitAndWait(
      "--nodes 2 --time 10 -- train --nproc-per-node 2 linear --epochs 2 --progress epochs");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("Submitted batch job "));
  EXPECT_THAT(r.out, HasSubstr("distrun-train: linear on 4 ranks, 2 epochs"));
  EXPECT_THAT(r.err, HasSubstr("ended COMPLETED with exit code 0"));
}

TEST_F(SubmitTest, AJobThatFailsIsNotRequeuedAndGivesItsExitCode) {
  CommandResult r = submitAndWait("--nodes 1 -- exec -- sh -c 'echo failing; exit 3'");
  EXPECT_EQ(r.exitCode, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("failing\n"));
  ASSERT_THAT(r.out, HasSubstr("Submitted batch job "));
  std::string id = r.out.substr(r.out.find("job ") + 4);
  id = id.substr(0, id.find('\n'));
  CommandResult show = slurm("scontrol show job " + id + " --oneliner");
  EXPECT_THAT(show.out, HasSubstr(" Restarts=0 ")) << show.out;
}

// The site describes the test nodes (all share this machine's cores): the
// plan gives local rank i core i, and srun binds each exec task so.
TEST_F(SubmitTest, ExecTasksRunOnThePlansCores) {
  std::ofstream(dir_ / "testnodes.site") << "description = the local test nodes\n"
                                            "node cpus 0-1\nnode numa 0 cpus 0-1\n";
  CommandResult r = submitAndWait(
      "--site testnodes --nodes 1 --nproc-per-node 2 -- exec -- sh -c 'echo \"$SLURM_LOCALID "
      "$(grep Cpus_allowed_list /proc/self/status | cut -f2)\"'",
      " DISTRUN_SITE_PATH=" + quote(dir_.string()));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n0 0\n"));
  EXPECT_THAT(r.out, HasSubstr("\n1 1\n"));
}

// Node spec1 (partition "reserved") keeps core 0 from jobs as LUMI keeps
// the first core of each CCD (Slurm's CpuSpecList); the site's description
// says so, and the task runs on the plan's core 1 through its mask.
TEST_F(SubmitTest, ExecTasksKeepOffTheSitesReservedCores) {
  std::ofstream(dir_ / "testnodes.site") << "description = the local test nodes\n"
                                            "node cpus 0-1\nnode reserved-cpus 0\n"
                                            "node numa 0 cpus 0-1\n";
  CommandResult r = submitAndWait(
      "--site testnodes -p reserved --nodes 1 --nproc-per-node 1 -- exec -- sh -c 'echo \"bound "
      "to $(grep "
      "Cpus_allowed_list /proc/self/status | cut -f2)\"'",
      " DISTRUN_SITE_PATH=" + quote(dir_.string()));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nbound to 1\n"));
}

// Without a terminal, Ctrl-C stops following and leaves the job in the queue.
TEST_F(SubmitTest, CtrlCWithoutATerminalLeavesTheJobRunning) {
  std::string log = (dir_ / "submit.log").string();
  int pid = startCommand("sh -c " + quote("cd " + quote(dir_.string()) + " && exec env " +
                                          cluster_->env() + distrun() +
                                          " submit --wait --job-name ctrlc -- exec -- sleep 300 "
                                          "</dev/null"),
                         log);
  ASSERT_TRUE(waitForLines(log, 2, 60)) << "the job did not start";  // submitted, RUNNING
  ::kill(pid, SIGINT);
  EXPECT_EQ(waitCommand(pid), 130);
  CommandResult queue = slurm("squeue -h -n ctrlc -o %T");
  EXPECT_THAT(queue.out, ::testing::AnyOf(HasSubstr("PENDING"), HasSubstr("RUNNING")));
  slurm("scancel -n ctrlc");
  std::string text = runCommand("cat " + quote(log)).out;
  EXPECT_THAT(text, HasSubstr("stopped following job"));
  EXPECT_THAT(text, HasSubstr("it keeps running (scancel "));
}

}  // namespace
}  // namespace distrun::testing
