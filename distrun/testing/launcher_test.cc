// `distrun run` with shell workers: supervision, signals, cleanup and
// rendezvous failures (label: multiproc). Workers write their pids to a
// file so the tests can check that none is left.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/system.h"
#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/socket.h"
#include "distrun/testing/command.h"
#include "distrun/testing/launcher_fixture.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;

class LauncherTest : public LauncherFixture {};

TEST_F(LauncherTest, WorkerExitCodeSevenStopsTheOthersAndIsReported) {
  CommandResult r = runCommand(
      "timeout 120 " + distrun() + " run --nproc-per-node 3 --log-dir " + quote(dir_) +
      " --rdzv-id job7 " +
      worker(
          "if [ $RANK = 2 ]; then sleep 0.3; echo 'fatal: bad batch' >&2; exit 7; fi; sleep 300"));
  EXPECT_EQ(r.exitCode, 7) << r.err;
  EXPECT_THAT(r.err, HasSubstr("distrun: job job7 failed (restart 0 of 0): root cause "
                               "was rank 2 (local rank 2) on node 0 (" +
                               thisHostName() + ")"));
  // The folder the report names is the one that holds the rank's files.
  EXPECT_THAT(r.err, HasSubstr("distrun: rank 2's log files are in " + dir_ +
                               "/job7/attempt_0/2 on " + thisHostName() + "\n"));
  EXPECT_THAT(log("job7/attempt_0/2/stderr.log"), HasSubstr("fatal: bad batch"));
  EXPECT_THAT(r.err, HasSubstr("exit code 7"));
  EXPECT_THAT(r.err, HasSubstr("  | fatal: bad batch\n"));
  EXPECT_THAT(log("job7/failure.json"), HasSubstr("\"rank\":2"));
  expectAllGone("pids");
}

TEST_F(LauncherTest, FailureReportThatCannotBeWrittenIsAnIoErrorAfterTheReport) {
  // A folder where failure.json should go: the report cannot replace it.
  std::filesystem::create_directories(path("job3/failure.json/in-the-way"));
  CommandResult r = runCommand("timeout 120 " + distrun() + " run --log-dir " + quote(dir_) +
                               " --rdzv-id job3 " + worker("echo 'bad input' >&2; exit 3"));
  EXPECT_EQ(r.exitCode, 74) << r.err;
  std::vector<std::string> err = lines(r.err);
  ASSERT_GE(err.size(), 3u) << r.err;
  EXPECT_THAT(err[0], ::testing::StartsWith("[0:0] bad input"));
  EXPECT_THAT(r.err, HasSubstr("distrun: job job3 failed (restart 0 of 0): root cause was rank 0 "
                               "(local rank 0) on node 0 (" +
                               thisHostName() + ")"));
  EXPECT_THAT(r.err, HasSubstr("exit code 3, at "));
  EXPECT_THAT(r.err, HasSubstr("  | bad input\n"));
  EXPECT_THAT(err.back(), ::testing::MatchesRegex(
                              "distrun: error: failure report .*/job3/failure.json: cannot "
                              "rename .*/job3/failure.json.tmp.[0-9]+ to it: Is a directory"));
  EXPECT_TRUE(std::filesystem::is_directory(path("job3/failure.json/in-the-way")));
  expectAllGone("pids");
}

TEST_F(LauncherTest, WorkerKilledBySignalGives128PlusSignal) {
  CommandResult r = runCommand("timeout 120 " + distrun() + " run --nproc-per-node 2 " +
                               worker("[ $RANK = 0 ] && kill -SEGV $$; sleep 300"));
  EXPECT_EQ(r.exitCode, 128 + SIGSEGV);
  EXPECT_THAT(r.err, HasSubstr("killed by signal 11 (SIGSEGV)"));
  expectAllGone("pids");
}

TEST_F(LauncherTest, AgentSigtermStopsEveryWorkerAndOrphan) {
  // Each worker also starts a grandchild in a session of its own, which
  // escapes the worker's process group: the subreaper agent must end it.
  int agent =
      startCommand(distrun() + " run --nproc-per-node 2 --term-timeout 30 " +
                       worker("setsid sleep 300 & echo $! >> " + path("orphans") +
                              "; trap 'echo got TERM; exit 0' TERM; while :; do sleep 0.1; done"),
                   path("agent.log"));
  ASSERT_TRUE(waitForLines(path("orphans"), 2, 60));
  ::kill(agent, SIGTERM);
  EXPECT_EQ(waitCommand(agent), 128 + SIGTERM);
  EXPECT_THAT(log("agent.log"), HasSubstr("got TERM"));
  EXPECT_THAT(log("agent.log"), HasSubstr("distrun: node 0: job interrupted by SIGTERM: stopping "
                                          "the workers (SIGKILL after 30 s)\n"));
  expectAllGone("pids");
  expectAllGone("orphans");
}

// Ctrl-C, and workers that ignore it: one line says the job is interrupted,
// one names the workers SIGKILL ends when the grace is over.
TEST_F(LauncherTest, StubbornWorkersAreNamedWhenTheGraceEnds) {
  int agent = startCommand(distrun() + " run --nproc-per-node 2 --term-timeout 0.5 " +
                               worker("while :; do sleep 0.1; done", "trap '' INT TERM"),
                           path("agent.log"));
  ASSERT_TRUE(waitForLines(path("pids"), 2, 60));
  ::kill(agent, SIGINT);
  EXPECT_EQ(waitCommand(agent), 128 + SIGINT);
  std::vector<int> pids = readInts(path("pids"));
  std::sort(pids.begin(), pids.end());
  const std::string agentLog = log("agent.log");
  EXPECT_THAT(agentLog, HasSubstr("distrun: node 0: job interrupted by SIGINT: stopping the "
                                  "workers (SIGKILL after 0.5 s)\n"));
  for (int pid : pids) EXPECT_THAT(agentLog, HasSubstr("(pid " + std::to_string(pid) + ")"));
  EXPECT_THAT(agentLog, HasSubstr("with SIGKILL: still running 0.5 s after SIGINT "
                                  "(--term-timeout)\n"));
  expectAllGone("pids");
}

// GNU timeout (and `kill -INT -- -PGID` beside `kill -INT PID`) sends its
// signal to the agent and to the agent's process group: the agent may read
// it twice, moments apart (here 20 ms, so that it surely reads both). That
// is one interruption, whose grace lets the workers finish cleanly, not a
// second signal killing them at once.
TEST_F(LauncherTest, OneCtrlCReadTwiceByTheAgentKeepsTheGrace) {
  int agent = startCommand(
      distrun() + " run --nproc-per-node 2 --term-timeout 30 " +
          // The trap is set before the pid is written: a SIGINT sent once
          // both pids are there always finds it.
          worker("while :; do sleep 0.1; done", "trap 'sleep 0.5; echo cleaned up; exit 0' INT"),
      path("agent.log"));
  ASSERT_TRUE(waitForLines(path("pids"), 2, 60));
  ::kill(agent, SIGINT);
  ::usleep(20000);
  ::kill(agent, SIGINT);
  EXPECT_EQ(waitCommand(agent), 128 + SIGINT);
  const std::string agentLog = log("agent.log");
  EXPECT_THAT(agentLog, HasSubstr("distrun: node 0: job interrupted by SIGINT"));
  EXPECT_THAT(agentLog, ::testing::Not(HasSubstr("SIGKILL: a second signal")));
  EXPECT_THAT(agentLog, HasSubstr("[0:0] cleaned up"));
  EXPECT_THAT(agentLog, HasSubstr("[0:1] cleaned up"));
  expectAllGone("pids");
}

// torchrun's one-node c10d recipe: no --node-rank, no DISTRUN_TOKEN.
TEST_F(LauncherTest, TorchrunOneNodeRecipeRuns) {
  const std::string endpoint = "localhost:" + std::to_string(freePort());
  CommandResult r = runCommand(
      "env -u DISTRUN_TOKEN timeout 120 " + distrun() +
      " run --nnodes=1 --rdzv_backend=c10d --rdzv_endpoint=" + endpoint +
      " --rdzv_id=myjob --nproc-per-node 2 sh -c 'echo run $TORCHELASTIC_RUN_ID rank $RANK of "
      "$WORLD_SIZE'");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("run myjob rank 0 of 2"));
  EXPECT_THAT(r.out, HasSubstr("run myjob rank 1 of 2"));
}

// Every worker gets a TORCHELASTIC_ERROR_FILE in a private run folder that
// the job's end removes; a folder that cannot be made (TMPDIR a file) costs
// the error files, with one note, never the job.
TEST_F(LauncherTest, ErrorFilesGoToAPrivateRunFolderOrAreGoneWithANote) {
  const std::string tmp = ::testing::TempDir() + "error-files-" + std::to_string(::getpid());
  std::filesystem::create_directories(tmp);
  CommandResult r =
      runCommand("TMPDIR=" + quote(tmp) + " timeout 120 " + distrun() +
                 " run --nproc-per-node 1 sh -c 'echo \"file $TORCHELASTIC_ERROR_FILE\"'");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::MatchesRegex(".*file " + tmp +
                                             "/distrun-[0-9]+/run-[A-Za-z0-9]{6}/"
                                             "[^/]+/attempt_0/0/error\\.json\n"));
  EXPECT_TRUE(std::filesystem::is_empty(tmp + "/distrun-" + std::to_string(::getuid())))
      << "the run folder outlived the job";
  std::filesystem::remove_all(tmp);
  CommandResult noFolder =
      runCommand("TMPDIR=/dev/null timeout 120 " + distrun() +
                 " run --nproc-per-node 1 sh -c 'echo \"file ${TORCHELASTIC_ERROR_FILE-none}\"'");
  EXPECT_EQ(noFolder.exitCode, 0) << noFolder.err;
  EXPECT_THAT(noFolder.out, HasSubstr("file none"));
  EXPECT_THAT(noFolder.err,
              ::testing::MatchesRegex("distrun: note: .*/dev/null/distrun-[0-9]+.*: "
                                      "the workers get no TORCHELASTIC_ERROR_FILE\n"));
  // Log files asked for (-r) need the folder: the job does not start
  // (exit 74), and the line says why and what to give.
  CommandResult noLogs = runCommand("TMPDIR=/dev/null timeout 120 " + distrun() +
                                    " run -r 3 --nproc-per-node 1 sh -c 'echo started'");
  EXPECT_EQ(noLogs.exitCode, 74) << noLogs.err;
  EXPECT_THAT(noLogs.out, ::testing::Not(HasSubstr("started")));
  EXPECT_THAT(noLogs.err, ::testing::MatchesRegex(
                              "distrun: error: log files without --log-dir \\(-r, -t, "
                              "--duplicate-\\*-filters\\) go to a private folder, and .*"
                              "/dev/null/distrun-[0-9]+.*: give --log-dir a folder this user "
                              "can write\n"));
}

// The job token travels in environments (private to the user), never on a
// command line (public in /proc/PID/cmdline): a worker finds it in no
// process's command line, the agent's and its own included
// (docs/security.md).
TEST_F(LauncherTest, TheTokenIsOnNoCommandLine) {
  const std::string token = path("token");
  // A control process with the token on its command line shows that the
  // scan would find it; it is left out of what the scan reports. It must
  // fork nothing: a shell's child holds the shell's command line until it
  // execs, and a scan landing in that window found the token there.
  const std::string scan =
      "printf %s \"$DISTRUN_TOKEN\" > " + token +
      "; /usr/bin/python3 -c 'import time; time.sleep(60)' \"x$(cat " + token +
      ")\" & c=$!; i=0; until grep -qaF -f " + token + " /proc/$c/cmdline || [ $i -gt 9999 ]; " +
      "do i=$((i+1)); done; grep -alF -f " + token + " /proc/[0-9]*/cmdline | grep -v " +
      "\"^/proc/$c/\"; grep -qaF -f " + token + " /proc/$c/cmdline && echo control found; kill $c";
  CommandResult r =
      runCommand("DISTRUN_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n') timeout 120 " +
                 distrun() + " run --nproc-per-node 1 sh -c " + quote(scan));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "[0:0] control found\n");
}

TEST_F(LauncherTest, AgentSigkillTakesWorkersDownThroughPdeathsig) {
  int agent =
      startCommand(distrun() + " run --nproc-per-node 2 " + worker("sleep 300"), path("agent.log"));
  ASSERT_TRUE(waitForLines(path("pids"), 2, 60));
  ::kill(agent, SIGKILL);
  EXPECT_EQ(waitCommand(agent), 128 + SIGKILL);
  std::vector<int> pids = readInts(path("pids"));
  for (int i = 0; i < 200 && (processAlive(pids[0]) || processAlive(pids[1])); ++i) {
    ::usleep(50000);  // the kernel delivers pdeathsig asynchronously
  }
  expectAllGone("pids");
}

// Each worker counts its rounds itself: the signal reaches the whole
// process group, and a `$(seq 300)` it killed once gave the loop no round
// at all (exit 9 in CI).
TEST_F(LauncherTest, UserSignalsReachWorkersAndTheJobGoesOn) {
  const std::string usr1 = path("usr1");
  const std::string body = "i=0; while [ $i -lt 300 ]; do [ -s " + usr1 + " ] && [ \"$(wc -l < " +
                           usr1 + ")\" -ge 2 ] 2>/dev/null && exit 0; sleep 0.1; i=$((i + 1)); " +
                           "done; exit 9";
  int agent = startCommand(distrun() + " run --nproc-per-node 2 " +
                               worker(body, "trap 'echo usr1 >> " + usr1 + "' USR1"),
                           path("agent.log"));
  ASSERT_TRUE(waitForLines(path("pids"), 2, 60));
  ::kill(agent, SIGUSR1);
  EXPECT_EQ(waitCommand(agent), 0) << log("agent.log");
  EXPECT_EQ(readInts(path("pids")).size(), 2u);
}

TEST_F(LauncherTest, NodeThatNeverJoinsIsNamed) {
  int port = freePort();
  CommandResult r =
      runCommand("DISTRUN_TOKEN=t timeout 120 " + distrun() +
                 " run --nnodes 2 --node-rank 0 --rdzv-endpoint 127.0.0.1:" + std::to_string(port) +
                 " --join-timeout 2 true");
  EXPECT_EQ(r.exitCode, 76);
  EXPECT_EQ(r.err,
            "distrun: error: node(s) 1 of 2 did not join within 2 s; they "
            "were expected to reach the rendezvous store at 127.0.0.1:" +
                std::to_string(port) + " (joined: 0)\n");
}

TEST_F(LauncherTest, WrongTokenIsRefused) {
  int port = freePort();
  int node0 = startCommand(
      "env DISTRUN_TOKEN=right " + distrun() + " run " + twoNodeFlags(0, port) + "true",
      path("node0.log"));
  CommandResult r = runCommand("DISTRUN_TOKEN=wrong timeout 120 " + distrun() + " run " +
                               twoNodeFlags(1, port) + "true");
  EXPECT_EQ(r.exitCode, 76);
  EXPECT_EQ(r.err, "distrun: error: the rendezvous store at 127.0.0.1:" + std::to_string(port) +
                       " refused this agent's token: every agent of a job needs "
                       "the same DISTRUN_TOKEN (when unset, it is derived from the user's "
                       "distrun secret file, which every node must share; where they do not, "
                       "export the same DISTRUN_TOKEN on every node); or the store there is "
                       "another job's, with its own token: give this job its own "
                       "--rdzv-endpoint port\n");
  // Node 0 is still waiting for node 1 in the rendezvous: SIGTERM must end
  // it now, not after its join timeout.
  ::kill(node0, SIGTERM);
  EXPECT_EQ(waitCommand(node0), 128 + SIGTERM);
}

TEST_F(LauncherTest, GarbageOnTheStorePortDoesNotStopTheJob) {
  int port = freePort();
  int node0 =
      startCommand("env DISTRUN_TOKEN=t " + distrun() + " run " + twoNodeFlags(0, port) +
                       "--nproc-per-node 1 " + worker("echo node0 rank $RANK of $WORLD_SIZE"),
                   path("node0.log"));
  runCommand(
      "for i in 1 2 3; do head -c 3000 /dev/urandom | timeout 5 "
      "bash -c 'cat > /dev/tcp/127.0.0.1/" +
      std::to_string(port) +
      "' ; printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 5 bash -c 'cat > "
      "/dev/tcp/127.0.0.1/" +
      std::to_string(port) + "'; done");
  CommandResult node1 =
      runCommand("DISTRUN_TOKEN=t timeout 120 " + distrun() + " run " + twoNodeFlags(1, port) +
                 "--nproc-per-node 1 " + worker("echo node1 rank $RANK of $WORLD_SIZE"));
  EXPECT_EQ(node1.exitCode, 0) << node1.err;
  EXPECT_THAT(node1.out, HasSubstr("[1:1] node1 rank 1 of 2"));
  EXPECT_EQ(waitCommand(node0), 0);
  EXPECT_THAT(log("node0.log"), HasSubstr("[0:0] node0 rank 0 of 2"));
}

TEST_F(LauncherTest, FailureOnOneNodeStopsTheOtherNode) {
  int port = freePort();
  int node0 = startCommand("env DISTRUN_TOKEN=t " + distrun() + " run " + twoNodeFlags(0, port) +
                               "--nproc-per-node 2 " + worker("sleep 300"),
                           path("node0.log"));
  CommandResult node1 =
      runCommand("DISTRUN_TOKEN=t timeout 120 " + distrun() + " run " + twoNodeFlags(1, port) +
                 "--nproc-per-node 1 " + worker("sleep 0.5; exit 3"));
  EXPECT_EQ(node1.exitCode, 3);
  EXPECT_EQ(waitCommand(node0), 3);
  EXPECT_THAT(log("node0.log"), HasSubstr("root cause was rank 2 (local rank 0) on node 1"));
  expectAllGone("pids");
}

TEST_F(LauncherTest, RestartReRendezvousesEveryNode) {
  // Rank 2 (node 1) fails in the first attempt only: both agents restart.
  int port = freePort();
  std::string body = "echo $RANK:$TORCHELASTIC_RESTART_COUNT >> " + path("attempts") +
                     "; [ $RANK = 2 ] && [ $TORCHELASTIC_RESTART_COUNT = 0 ] && exit 6; "
                     "[ $TORCHELASTIC_RESTART_COUNT = 1 ] || sleep 300";
  int node0 = startCommand("env DISTRUN_TOKEN=t " + distrun() + " run " + twoNodeFlags(0, port) +
                               "--max-restarts 1 --nproc-per-node 2 " + worker(body),
                           path("node0.log"));
  CommandResult node1 =
      runCommand("DISTRUN_TOKEN=t timeout 120 " + distrun() + " run " + twoNodeFlags(1, port) +
                 "--max-restarts 1 --nproc-per-node 1 " + worker(body));
  EXPECT_EQ(node1.exitCode, 0) << node1.err;
  EXPECT_EQ(waitCommand(node0), 0) << log("node0.log");
  EXPECT_THAT(node1.err, HasSubstr("rank 2 failed (exit code 6); restarting all workers "
                                   "(restart 1 of 1)"));
  std::vector<std::string> attempts = lines(log("attempts"));
  for (const char* seen : {"0:1", "1:1", "2:1"}) {
    EXPECT_NE(std::find(attempts.begin(), attempts.end(), seen), attempts.end()) << seen;
  }
  expectAllGone("pids");
}

TEST_F(LauncherTest, TorchrunNameIsDistrunRun) {
  CommandResult r = runCommand(quote(binaryPath("torchrun")) +
                               " --nproc_per_node=2 --no_python sh -c 'echo $RANK'");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[0:0] 0\n"));
  EXPECT_THAT(r.out, HasSubstr("[0:1] 1\n"));
}

// A script without .py through the torchrun link is run by Python, as
// torchrun runs it (here `python3 -u` from PATH).
TEST_F(LauncherTest, TorchrunNameRunsAScriptWithoutPyUnderPython) {
  const std::string script = dir_ + "/train";
  {
    std::ofstream out(script);
    out << "import os\nprint('python', os.environ['RANK'])\n";
  }
  CommandResult r =
      runCommand(quote(binaryPath("torchrun")) + " --nproc_per_node=2 " + quote(script));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[0:0] python 0"));
  EXPECT_THAT(r.out, HasSubstr("[0:1] python 1"));
}

TEST_F(LauncherTest, PetVariablesAndRedirects) {
  CommandResult r =
      runCommand("PET_NPROC_PER_NODE=2 " + distrun() + " run --log-dir " + quote(dir_) +
                 " --rdzv-id j -r 1 -t 2 sh -c "
                 "'echo out$RANK; echo err$RANK >&2'");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "");  // stdout redirected to files only
  EXPECT_THAT(r.err, HasSubstr("[0:1] err1"));
  EXPECT_EQ(log("j/attempt_0/1/stdout.log"), "out1\n");
  EXPECT_EQ(log("j/attempt_0/0/stderr.log"), "err0\n");
}

}  // namespace
}  // namespace distrun::testing
