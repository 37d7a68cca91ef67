// `distrun submit` against the local Slurm cluster: real sbatch, the batch
// script on real nodes, --wait following it with squeue and scontrol.
#include <signal.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

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

// The job's status file (next to its output) holds rank 0's last record,
// and --wait's status line says the job's state (docs/submit.md).
TEST_F(SubmitTest, TrainOnTwoNodesRunsToTheEndAndExitsZero) {
  CommandResult r = submitAndWait(
      "--status line --nodes 2 --time 10 -- train --nproc-per-node 2 linear --epochs 2 "
      "--progress epochs");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("Submitted batch job "));
  EXPECT_THAT(r.out, HasSubstr("distrun-train: linear on 4 ranks, 2 epochs"));
  EXPECT_THAT(r.err, HasSubstr("ended COMPLETED with exit code 0"));
  std::string id = r.out.substr(r.out.find("job ") + 4);
  id = id.substr(0, id.find('\n'));
  EXPECT_THAT(r.err, HasSubstr("\rjob " + id + " "));
  EXPECT_THAT(r.err, ::testing::EndsWith("with exit code 0\n")) << "the line erased first";
  std::ifstream status(dir_ / (id + ".out.status"));
  std::string record;
  std::getline(status, record);
  EXPECT_THAT(record, ::testing::StartsWith("status epoch=2 epochs=2 step=16 steps=16 loss="));
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

// One distrun per node binds its workers itself: local rank i on core i of
// the plan from this node's cores (read with hwloc on the node).
TEST_F(SubmitTest, RunWorkersRunOnThePlansCores) {
  CommandResult r = submitAndWait(
      "--nodes 1 -- run --nproc-per-node 2 sh -c 'echo \"worker $LOCAL_RANK on $(grep "
      "Cpus_allowed_list /proc/self/status | cut -f2)\"'");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("worker 0 on 0\n"));
  EXPECT_THAT(r.out, HasSubstr("worker 1 on 1\n"));
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

// "parameters identical on all 4 ranks: crc32 1234abcd" -> "1234abcd"; the
// last such line of `text`.
std::string lastChecksum(const std::string& text) {
  const std::string key = "ranks: crc32 ";
  size_t at = text.rfind(key);
  return at == std::string::npos ? "" : text.substr(at + key.size(), 8);
}

class PreemptionTest : public SubmitTest {
 protected:
  // 4 ranks of linear, --deterministic: the parameters a run without any
  // interruption ends with, from srun directly.
  std::string uninterruptedChecksum(const std::string& training) {
    CommandResult r = slurm("timeout 300 srun -N2 --ntasks-per-node=1 " + distrun() + training);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return lastChecksum(r.out);
  }
  // `distrun submit --wait` in the background, its output in `log`.
  int startSubmit(const std::string& args, const std::string& log) {
    return startCommand(
        "sh -c " + quote("cd " + quote(dir_.string()) + " && exec env " + cluster_->env() +
                         distrun() + " submit --wait " + args + " </dev/null"),
        log);
  }
  std::string read(const std::string& path) { return runCommand("cat " + quote(path)).out; }
  // Epochs of training() that last about `seconds` laid out as a submitted
  // job lays them out (one task a node holding its CPUs, the launcher
  // binding its workers), timed on 100 epochs: at least 300.
  int epochsLasting(double seconds) {
    CommandResult r =
        slurm("timeout 300 srun -N2 --ntasks-per-node=1 --cpus-per-task=$(nproc) --cpu-bind=none " +
              distrun() + training(100));
    std::filesystem::remove(dir_ / "run.snap");
    std::smatch took;
    const std::regex tookRe("100 epochs in ([0-9.]+) s");
    if (r.exitCode != 0 || !std::regex_search(r.out, took, tookRe)) {
      ADD_FAILURE() << "the timing run failed: " << r.out << r.err;
      return 300;
    }
    return std::max(300, static_cast<int>(100 * seconds / std::stod(took[1].str())));
  }

  std::string training(int epochs) {
    return " train --nproc-per-node 2 linear --deterministic --save-every 0 --progress epochs "
           "--epochs " +
           std::to_string(epochs) + " --snapshot " + quote((dir_ / "run.snap").string());
  }
};

// Slurm's warning (USR1 to the batch script, as --signal=B:USR1 sends it)
// mid-run: the ranks snapshot, the script requeues the job, the requeued
// job resumes and ends with an uninterrupted run's parameters.
TEST_F(PreemptionTest, AWarnedJobSnapshotsRequeuesAndEndsAsIfUninterrupted) {
  const std::string want = uninterruptedChecksum(training(150));
  ASSERT_NE(want, "");
  std::filesystem::remove(dir_ / "run.snap");
  const std::string log = (dir_ / "submit.log").string();
  int pid = startSubmit(
      "--nodes 2 --time 10 --output " + quote((dir_ / "%j.out").string()) + " --" + training(150),
      log);
  ASSERT_TRUE(waitForLines(log, 4, 120)) << read(log);
  const std::string started = read(log);
  ASSERT_THAT(started, HasSubstr("Submitted batch job "));
  std::string id = started.substr(started.find("job ") + 4);
  id = id.substr(0, id.find('\n'));
  for (int i = 0; i < 600 && read(log).find("epoch 1/150") == std::string::npos; ++i) {
    ::usleep(100000);
  }
  EXPECT_EQ(slurm("scancel --signal=USR1 --batch " + id).exitCode, 0);
  EXPECT_EQ(waitCommand(pid), 0) << read(log);
  const std::string out = read(log);
  EXPECT_THAT(out, HasSubstr("distrun-train: SIGUSR1: wrote the snapshot "));
  EXPECT_THAT(out, HasSubstr("wrote a snapshot on the warning signal: requeued (restart 1 of 3)"));
  EXPECT_THAT(out, HasSubstr("resumed from "));
  EXPECT_THAT(out, HasSubstr("ended COMPLETED with exit code 0"));
  EXPECT_EQ(lastChecksum(out), want) << out;
}

// A real time limit: one minute with a 50 s warning, which Slurm sends 10
// to 40 s after the start (it checks limits every 30 s). The training lasts
// about 80 s here, whatever this machine's speed (epochsLasting), so the
// first run is warned by Slurm itself, snapshots and requeues; once the
// requeued run has resumed, the test lifts the limit so that the training
// ends on every rank with the same parameters. That the resumed run ends
// with an uninterrupted run's parameters is the test above's check (the same
// snapshot and resume, only the warning's sender differs): a reference run
// here would be 80 s more of training, the costliest part of the test.
TEST_F(PreemptionTest, AOneMinuteLimitSignalsRequeuesAndFinishesTheTraining) {
  const int epochs = epochsLasting(80);
  const std::string log = (dir_ / "submit.log").string();
  int pid = startSubmit("--nodes 2 --time 1 --signal-grace 50 --output " +
                            quote((dir_ / "%j.out").string()) + " --" + training(epochs),
                        log);
  for (int i = 0; i < 3000; ++i) {
    const std::string sofar = read(log);
    if (sofar.find("resumed from ") != std::string::npos ||
        sofar.find("ended COMPLETED") != std::string::npos) {
      break;
    }
    ::usleep(100000);
  }
  const std::string started = read(log);
  ASSERT_THAT(started, HasSubstr("requeued (restart 1 of 3)"))
      << (started.find("ended COMPLETED") != std::string::npos
              ? std::to_string(epochs) + " epochs ended before Slurm's warning"
              : "the job was neither requeued nor ended within 300 s");
  std::string id = started.substr(started.find("job ") + 4);
  id = id.substr(0, id.find('\n'));
  EXPECT_EQ(slurm("scontrol update JobId=" + id + " TimeLimit=30").exitCode, 0);
  EXPECT_EQ(waitCommand(pid), 0) << read(log);
  const std::string out = read(log);
  EXPECT_THAT(out, HasSubstr("resumed from "));
  EXPECT_THAT(out, HasSubstr("ended COMPLETED with exit code 0"));
  EXPECT_THAT(out, HasSubstr("epoch " + std::to_string(epochs) + "/" + std::to_string(epochs)));
  EXPECT_NE(lastChecksum(out), "") << "no 'parameters identical on all 4 ranks' line: " << out;
}

// A program that knows nothing of the protocol, under the same one-minute
// limit and 50 s grace: the job asks Slurm for no warning, so nothing
// reaches the program when Slurm would have warned (10 to 40 s after the
// start), and it runs on to its own end at 45 s, as under plain sbatch.
TEST_F(PreemptionTest, APlainProgramRunsPastTheWarningToItsOwnEnd) {
  std::ofstream(dir_ / "plain.py") << "import time\n"
                                      "start = time.monotonic()\n"
                                      "while time.monotonic() - start < 45:\n"
                                      "    time.sleep(1)\n"
                                      "print('plain: done after 45 s', flush=True)\n";
  const std::string log = (dir_ / "submit.log").string();
  int pid = startSubmit("--nodes 1 --time 1 --signal-grace 50 --output " +
                            quote((dir_ / "%j.out").string()) + " -- run " +
                            quote((dir_ / "plain.py").string()),
                        log);
  EXPECT_EQ(waitCommand(pid), 0) << read(log);
  const std::string out = read(log);
  EXPECT_THAT(out, HasSubstr("submit: note: --signal-grace 50 asks no warning"));
  EXPECT_THAT(out, HasSubstr("plain: done after 45 s"));
  EXPECT_THAT(out, HasSubstr("ended COMPLETED with exit code 0"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("killed by signal")));
}

}  // namespace
}  // namespace distrun::testing
