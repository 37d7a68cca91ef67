// `distrun train` end to end: ranks as processes under the node agent
// (label: multiproc). The MNIST tests read the repository's data/ folder,
// which scripts/prepare-mnist builds (scripts/test runs it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "distrun/common/system.h"
#include "distrun/common/temp_dir_testing.h"
#include "distrun/testing/command.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;

std::string distrun() { return quote(binaryPath("distrun")); }

std::string dataDir() { return sourcePath("data"); }

bool haveMnist() {
  return std::filesystem::exists(dataDir() + "/MNIST/raw/train-images-idx3-ubyte");
}

// "parameters identical on all 2 ranks: crc32 1234abcd" -> "1234abcd".
std::string checksumIn(const std::string& out) {
  std::smatch m;
  const std::regex line("parameters identical on all (\\d+) ranks: crc32 ([0-9a-f]{8})");
  return std::regex_search(out, m, line) ? m[2].str() : "";
}

TEST(TrainProcessTest, LinearOnTwoRanksWritesMetricsAndEqualReplicas) {
  const TempDir tmp;
  const std::string dir = tmp.path();
  CommandResult r =
      runCommand("timeout 300 " + distrun() +
                 " train --nproc-per-node 2 linear --epochs 3 --metrics " + quote(dir + "/m.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[0:0] epoch 3/3  loss "));
  EXPECT_NE(checksumIn(r.out), "") << r.out;
  std::ifstream in(dir + "/m.json");
  const nlohmann::json m = nlohmann::json::parse(in);
  EXPECT_EQ(m["world_size"], 2);
  ASSERT_EQ(m["epochs"].size(), 3u);
  EXPECT_LT(m["epochs"][2]["train_loss"].get<double>(), m["epochs"][0]["train_loss"].get<double>());
  // Each rank's wait for its averaged gradients: some, within the epoch.
  const nlohmann::json& sync = m["epochs"][2]["sync_seconds"];
  ASSERT_EQ(sync.size(), 2u);
  for (const auto& s : sync) {
    EXPECT_GT(s.get<double>(), 0);
    EXPECT_LE(s.get<double>(), m["epochs"][2]["seconds"].get<double>());
  }
}

// Two agents on this machine as two nodes of two ranks: DDP's allreduces
// take the hierarchical path (shared memory within each node, TCP between
// the leaders), and the four replicas end identical.
TEST(TrainProcessTest, LinearOnTwoAgentsAsTwoNodesEndsWithEqualReplicas) {
  const TempDir tmp;
  const int port = pickFreeTcpPort();
  std::vector<int> agents;
  for (int n = 0; n < 2; ++n) {
    agents.push_back(startCommand("env DISTRUN_TOKEN=t timeout 300 " + distrun() +
                                      " train --nnodes 2 --nproc-per-node 2 --rdzv-endpoint "
                                      "127.0.0.1:" +
                                      std::to_string(port) + " linear --epochs 3",
                                  tmp.path() + "/agent" + std::to_string(n)));
  }
  for (int n = 0; n < 2; ++n) {
    EXPECT_EQ(waitCommand(agents[static_cast<size_t>(n)]), 0) << "agent " << n;
  }
  // Which agent is node 0 is the rendezvous' choice: read both.
  const std::string out =
      runCommand("cat " + quote(tmp.path() + "/agent0") + " " + quote(tmp.path() + "/agent1")).out;
  EXPECT_THAT(out, HasSubstr("[0:0] epoch 3/3  loss ")) << out;
  EXPECT_THAT(out, HasSubstr("parameters identical on all 4 ranks")) << out;
}

// them (2 ranks), distrun-train the rest. An unknown flag there is one
// line and exit 64, before any worker starts.
TEST(TrainProcessTest, LauncherFlagsMayFollowTheWorkload) {
  CommandResult r = runCommand("timeout 300 " + distrun() +
                               " train linear --epochs 1 --nproc-per-node 2 --progress epochs");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[0:0] distrun-train: linear on 2 ranks, 1 epochs in ")) << r.out;
  EXPECT_NE(checksumIn(r.out), "") << r.out;
  r = runCommand("timeout 300 " + distrun() +
                 " train linear --nproc-per-node=2 --epochs=1 --log-prefix='<{rank}> '");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("<0> distrun-train: linear on 2 ranks")) << r.out;

  r = runCommand(distrun() + " train linear --nproc-per-node 2 --frobnicate");
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_EQ(r.err,
            "distrun: error: train: unknown flag --frobnicate: neither a "
            "launcher flag ('distrun train --help') nor a training flag "
            "('distrun train mnist --help')\n");
  EXPECT_EQ(r.out, "");
}

// --balance-load through the command line, over shared memory: every
// sample of the epoch is trained on (samples/s x seconds), the replicas
// end equal.
TEST(TrainProcessTest, BalancedLinearOnTwoRanksTrainsEverySample) {
  const TempDir tmp;
  const std::string dir = tmp.path();
  CommandResult r = runCommand("timeout 300 " + distrun() +
                               " train --nproc-per-node 2 linear --epochs 2 --balance-load" +
                               " --metrics " + quote(dir + "/m.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(checksumIn(r.out), "") << r.out;
  std::ifstream in(dir + "/m.json");
  const nlohmann::json m = nlohmann::json::parse(in);
  ASSERT_EQ(m["epochs"].size(), 2u);
  for (const auto& e : m["epochs"]) {
    EXPECT_NEAR(e["samples_per_second"].get<double>() * e["seconds"].get<double>(), 2048, 1e-6);
  }
  EXPECT_LT(m["epochs"][1]["train_loss"].get<double>(), m["epochs"][0]["train_loss"].get<double>());
}

// A snapshot written by 2 ranks: 3 ranks go on from its epoch's end; from
// mid-epoch, 1 rank goes on with the rest of the epoch (an elastic job that
// lost a node there), saying so in one line, and every epoch is in the
// metrics.
TEST(TrainProcessTest, ASnapshotResumesOnAnotherWorldSizeAtAnEpochsEndAndMidEpoch) {
  const TempDir tmp;
  const std::string dir = tmp.path();
  const std::string snapshot = " --snapshot " + quote(dir + "/s.snap");
  CommandResult r = runCommand("timeout 300 " + distrun() +
                               " train --nproc-per-node 2 linear --epochs 1" + snapshot);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = runCommand("timeout 300 " + distrun() + " train --nproc-per-node 3 linear --epochs 2" +
                 " --progress epochs" + snapshot);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("epoch 2, step 0 of 22 (written by 2 ranks, now 3)")) << r.out;

  // Back to 2 ranks for epoch 3, a snapshot every 10th step of the run:
  // 32 + 22 steps before it, so the last at its step 26, after 2 x 26 x 32
  // samples of the epoch's order.
  r = runCommand("timeout 300 " + distrun() + " train --nproc-per-node 2 linear --epochs 3" +
                 " --save-every 0 --save-every-steps 10" + snapshot);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = runCommand("timeout 300 " + quote(binaryPath("distrun-train")) +
                 " linear --epochs 4 --progress epochs --metrics " + quote(dir + "/m.json") +
                 snapshot);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("resuming epoch 3 mid-way at sample 1664 of 2048 on 1 rank "
                               "(snapshot " +
                               dir + "/s.snap written by 2 ranks)\n"))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr("epoch 3/4  loss ")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("epoch 4/4  loss ")) << r.out;
  std::ifstream in(dir + "/m.json");
  const nlohmann::json m = nlohmann::json::parse(in);
  ASSERT_EQ(m["epochs"].size(), 4u);
  // Epoch 3 here: the 384 samples left, over its own seconds.
  const nlohmann::json& third = m["epochs"][2];
  EXPECT_NEAR(third["samples_per_second"].get<double>() * third["seconds"].get<double>(), 384,
              1e-6);
}

// Resuming a snapshot that finished every epoch asked for trains nothing
// and says so, and how to train more; exit 0.
TEST(TrainProcessTest, AFinishedSnapshotLeavesNothingToTrain) {
  const TempDir tmp;
  const std::string dir = tmp.path();
  const std::string train = quote(binaryPath("distrun-train")) +
                            " linear --epochs 2 --progress epochs --snapshot " +
                            quote(dir + "/s.snap");
  CommandResult r = runCommand("timeout 300 " + train);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = runCommand("timeout 300 " + train);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "distrun-train: nothing left to train: the snapshot " + dir +
                       "/s.snap finished epoch 2 and --epochs is 2: raise --epochs to train "
                       "more\n");
  EXPECT_EQ(r.err, "");
}

// Debian's reference BLAS (libblas3, always installed beside OpenBLAS)
// preloaded in place of the system's choice: rank 0 warns once, names the
// library and the package that fixes it, and trains on.
TEST(TrainProcessTest, AReferenceBlasIsReportedByRankZero) {
  const std::string reference = "/usr/lib/x86_64-linux-gnu/blas";
  if (!std::filesystem::exists(reference + "/libblas.so.3")) {
    GTEST_SKIP() << "no " << reference << "/libblas.so.3 (Debian's libblas3)";
  }
  CommandResult r = runCommand("LD_LIBRARY_PATH=" + reference + " timeout 300 " + distrun() +
                               " train --nproc-per-node 2 linear --epochs 1");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("[0:0] distrun-train: warning: LibTorch's BLAS is " + reference +
                               "/libblas.so.3"));  // and the version the link resolves to
  EXPECT_THAT(r.err, HasSubstr(", a reference implementation: matrix products run ~20x slower "
                               "(install libopenblas0-openmp: scripts/install-deps)\n"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("[0:1] distrun-train: warning")));
}

TEST(TrainProcessTest, ErrorsNameTheInputAndExitWithTheirCode) {
  CommandResult r = runCommand(distrun() + " train --nproc-per-node 1");
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_THAT(r.err, HasSubstr("distrun: error: train: expected a workload (mnist or linear)"));
  r = runCommand(quote(binaryPath("distrun-train")) + " resnet");
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_EQ(r.err, "distrun: error: workload 'resnet': expected mnist or linear\n");
  r = runCommand(quote(binaryPath("distrun-train")) + " linear --epochs 0");
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_EQ(r.err, "distrun: error: --epochs 0: expected at least 1\n");
  r = runCommand(quote(binaryPath("distrun-train")) + " linear --balance-load --deterministic");
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_EQ(r.err,
            "distrun: error: --balance-load with --deterministic: the split of each "
            "step follows the ranks' timing, so runs cannot repeat bit for bit; choose one\n");
  r = runCommand(quote(binaryPath("distrun-train")) + " mnist --data /nonexistent");
  EXPECT_EQ(r.exitCode, 74) << r.err;
  EXPECT_THAT(r.err, HasSubstr("distrun: error: MNIST folder '/nonexistent' does not exist: "
                               "run scripts/prepare-mnist, or give the folder of a torchvision "
                               "MNIST download with --data DIR\n"));
  // Under the agent the worker's failure is reported as the worker's exit code.
  r = runCommand(distrun() + " train --nproc-per-node 2 linear --progress fancy");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("distrun: error: --progress 'fancy': expected auto, bar, "
                               "epochs or none\n"));
}

// A --metrics or --snapshot file that cannot be written: one line naming
// the flag, the file and what is wrong; exit 74 (io), before any training
// step (rank 0 checks first: Trainer::run).
TEST(TrainProcessTest, FilesThatCannotBeWrittenAreIoErrorsNamingThem) {
  const std::string train =
      quote(binaryPath("distrun-train")) + " linear --epochs 1 --progress none";
  CommandResult r = runCommand(train + " --metrics /nonexistent/dir/m.json");
  EXPECT_EQ(r.exitCode, 74) << r.err;
  EXPECT_EQ(r.err,
            "distrun: error: --metrics /nonexistent/dir/m.json: the folder /nonexistent/dir "
            "does not exist: create it, or choose another path\n");
  r = runCommand(train + " --snapshot /nonexistent/dir/s.snap");
  EXPECT_EQ(r.exitCode, 74) << r.err;
  EXPECT_EQ(r.err,
            "distrun: error: --snapshot /nonexistent/dir/s.snap: the folder /nonexistent/dir "
            "does not exist: create it, or choose another path\n");
}

// A distrun without its training runtime beside it (built with
// -DDISTRUN_TRAIN=OFF, or the package distrun-train not installed): one
// line naming the missing program and how to get it, exit 127, nothing
// started.
TEST(TrainProcessTest, NoTrainingRuntimeBesideDistrunIsNamedBeforeAnythingStarts) {
  const TempDir tmp;
  const std::string copy = tmp.path() + "/distrun";
  std::filesystem::copy_file(binaryPath("distrun"), copy);
  CommandResult r = runCommand(quote(copy) + " train --nproc-per-node 2 linear --epochs 1");
  EXPECT_EQ(r.exitCode, 127) << r.err;
  EXPECT_EQ(r.err, "distrun: error: train: no training runtime: " + tmp.path() +
                       "/distrun-train is missing (install the package distrun-train, or build "
                       "distrun with -DDISTRUN_TRAIN=ON)\n");
  EXPECT_EQ(r.out, "");
}

// A 2-rank job whose snapshot cannot be written (the sysfs root takes no
// new file, not even root's): `distrun train` refuses it before starting
// anything; started by `distrun run` (the check `distrun train` makes is
// not there), rank 0 finds it before the first step and both ranks end
// with its one line, rank 1 naming rank 0: no rank waits for the other.
TEST(TrainProcessTest, AnUnwritableSnapshotEndsATwoRankJobBeforeTheFirstStep) {
  const std::string line = "distrun: error: --snapshot /sys/s.snap: cannot create a file in /sys: ";
  CommandResult r = runCommand("timeout 120 " + distrun() +
                               " train --nproc-per-node 2 linear --snapshot /sys/s.snap");
  EXPECT_EQ(r.exitCode, 74) << r.err;
  EXPECT_THAT(r.err, ::testing::StartsWith(line));
  EXPECT_EQ(lines(r.err).size(), 1u) << r.err;
  EXPECT_EQ(r.out, "");  // no worker printed anything: none started

  r = runCommand("timeout 120 " + distrun() + " run --nproc-per-node 2 " +
                 quote(binaryPath("distrun-train")) +
                 " linear --epochs 50 --progress epochs --snapshot /sys/s.snap");
  EXPECT_EQ(r.exitCode, 74) << r.err;  // not 124: nobody hung
  EXPECT_THAT(r.err, HasSubstr("[0:0] " + line));
  EXPECT_THAT(r.err, HasSubstr("[0:1] distrun: error: rank 0: --snapshot /sys/s.snap: "));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("epoch 1/50")));
}

// The pid of the distrun-train process of `rank` whose command line
// mentions `marker`; 0 when there is none (yet).
int workerPid(const std::string& marker, int rank) {
  for (const std::string& pid : lines(runCommand("pgrep -f " + quote(marker)).out)) {
    std::ifstream environ("/proc/" + pid + "/environ");
    std::string all((std::istreambuf_iterator<char>(environ)), {});
    std::ifstream cmdline("/proc/" + pid + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(cmdline)), {});
    if (cmd.find("distrun-train") == std::string::npos) continue;
    if (all.find(std::string("\0RANK=", 6) + std::to_string(rank) + '\0') != std::string::npos) {
      return std::stoi(pid);
    }
  }
  return 0;
}

// A worker SIGKILLed mid-epoch under --max-restarts 1: the agent restarts
// both ranks, they resume from the last step snapshot and, being
// --deterministic, end with the parameters of an uninterrupted run.
TEST(TrainProcessTest, KilledWorkerResumesFromTheSnapshotToTheSameParameters) {
  if (!haveMnist()) GTEST_SKIP() << "no MNIST under " << dataDir() << ": run scripts/prepare-mnist";
  const TempDir tmp;
  const std::string dir = tmp.path();
  const std::string flags = " mnist --data " + quote(dataDir()) +
                            " --limit-train 2000 --limit-test 500 --epochs 2 --batch-size 32"
                            " --deterministic --save-every-steps 8 --progress epochs --snapshot ";
  CommandResult reference = runCommand("timeout 300 " + distrun() + " train --nproc-per-node 2" +
                                       flags + quote(dir + "/reference.snap"));
  ASSERT_EQ(reference.exitCode, 0) << reference.err;
  const std::string want = checksumIn(reference.out);
  ASSERT_NE(want, "") << reference.out;

  const std::string snapshot = dir + "/killed.snap";
  const int agent =
      startCommand("timeout 300 " + distrun() + " train --nproc-per-node 2 --max-restarts 1" +
                       flags + quote(snapshot),
                   dir + "/log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  int victim = 0;
  while (victim == 0 && std::chrono::steady_clock::now() < deadline) {
    if (std::filesystem::exists(snapshot)) victim = workerPid(snapshot, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(victim, 0) << "no snapshot or no rank 1 worker within 240 s";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  EXPECT_EQ(waitCommand(agent), 0);
  const std::string log = runCommand("cat " + quote(dir + "/log")).out;
  EXPECT_THAT(log, HasSubstr("resumed from " + snapshot + ": epoch ")) << log;
  EXPECT_EQ(checksumIn(log), want) << log;
}

// The preemption protocol (docs/training.md, "Preemption").

// The first child of `pid` (what `timeout` runs: the agent); 0 when none.
int childOf(int pid) {
  std::vector<std::string> children = lines(runCommand("pgrep -P " + std::to_string(pid)).out);
  return children.empty() ? 0 : std::stoi(children.front());
}

// Waits until `log` has a line containing `text` (or 240 s passed).
bool waitForText(const std::string& log, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (std::chrono::steady_clock::now() < deadline) {
    if (runCommand("grep -qF " + quote(text) + " " + quote(log)).exitCode == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// SIGUSR1 to the agent mid-run: both ranks agree at a step boundary, rank 0
// writes the snapshot, every process exits 79. Resumed, the run ends with
// the parameters of an uninterrupted --deterministic run.
TEST(TrainProcessTest, UsrOneSnapshotsExits79AndTheResumeEndsLikeAnUninterruptedRun) {
  const TempDir tmp;
  const std::string dir = tmp.path();
  const std::string flags =
      " train --nproc-per-node 2 linear --epochs 1000 --deterministic --save-every 0"
      " --progress epochs --snapshot ";
  CommandResult reference =
      runCommand("timeout 300 " + distrun() + flags + quote(dir + "/reference.snap"));
  ASSERT_EQ(reference.exitCode, 0) << reference.err;
  const std::string want = checksumIn(reference.out);
  ASSERT_NE(want, "") << reference.out;

  const std::string snapshot = dir + "/s.snap";
  const std::string log = dir + "/log";
  const int timeout = startCommand("timeout 300 " + distrun() + flags + quote(snapshot), log);
  ASSERT_TRUE(waitForText(log, "epoch 1/1000")) << runCommand("cat " + quote(log)).out;
  ASSERT_EQ(::kill(childOf(timeout), SIGUSR1), 0);
  EXPECT_EQ(waitCommand(timeout), 79);
  const std::string first = runCommand("cat " + quote(log)).out;
  const std::regex wrote("distrun-train: SIGUSR1: wrote the snapshot " + snapshot +
                         " at epoch \\d+ step \\d+; exit 79 \\(requeue to resume\\)");
  EXPECT_TRUE(std::regex_search(first, wrote)) << first;
  EXPECT_THAT(first, HasSubstr("distrun: node 0: job checkpointed on SIGUSR1: the workers exited "
                               "79 (rank "));
  EXPECT_THAT(first, HasSubstr("exit 79 asks the batch script to requeue it\n"));
  EXPECT_THAT(first, ::testing::Not(HasSubstr("failed"))) << first;
  EXPECT_TRUE(std::filesystem::exists(snapshot));

  CommandResult resumed = runCommand("timeout 300 " + distrun() + flags + quote(snapshot));
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("resumed from " + snapshot + ": epoch "));
  EXPECT_EQ(checksumIn(resumed.out), want) << resumed.out;
}

// Without --snapshot nothing can be saved: rank 0 says so and the job
// trains to its end (exit 0), not requeued.
TEST(TrainProcessTest, UsrOneWithoutASnapshotSaysSoAndTrainsOn) {
  const TempDir tmp;
  const std::string dir = tmp.path();
  const std::string log = dir + "/log";
  const int timeout =
      startCommand("timeout 300 " + distrun() +
                       " train --nproc-per-node 2 linear --epochs 1000 --progress epochs",
                   log);
  ASSERT_TRUE(waitForText(log, "epoch 1/1000")) << runCommand("cat " + quote(log)).out;
  ASSERT_EQ(::kill(childOf(timeout), SIGUSR1), 0);
  EXPECT_EQ(waitCommand(timeout), 0);
  const std::string out = runCommand("cat " + quote(log)).out;
  EXPECT_THAT(out, HasSubstr("distrun-train: SIGUSR1: no --snapshot, so nothing can be saved: "
                             "training goes on (the job will end at its time limit and not be "
                             "requeued)"));
  EXPECT_THAT(out, HasSubstr("epoch 1000/1000"));
}

// A worker that crashes is a failure as always: its code, not 79.
TEST(TrainProcessTest, ACrashedWorkerIsAFailureNotACheckpoint) {
  const TempDir tmp;
  const std::string dir = tmp.path();
  const std::string snapshot = dir + "/crash.snap";
  const std::string log = dir + "/log";
  const int timeout = startCommand("timeout 300 " + distrun() +
                                       " train --nproc-per-node 2 linear --epochs 1000 "
                                       "--progress epochs --snapshot " +
                                       quote(snapshot),
                                   log);
  ASSERT_TRUE(waitForText(log, "epoch 1/1000")) << runCommand("cat " + quote(log)).out;
  const int victim = workerPid(snapshot, 1);
  ASSERT_NE(victim, 0);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  EXPECT_EQ(waitCommand(timeout), 128 + SIGKILL);
  const std::string out = runCommand("cat " + quote(log)).out;
  EXPECT_THAT(out, HasSubstr("rank 1")) << out;
  EXPECT_THAT(out, ::testing::Not(HasSubstr("checkpointed"))) << out;
}

}  // namespace
}  // namespace distrun::testing
