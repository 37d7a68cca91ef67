// `distrun run` names the rank whose own error started a failure, not the
// ranks that only lost it (label: multiproc). In each test the failing
// rank's peers exit as echoes (exit 69 with distrun's "lost rank", or
// Gloo's "Connection closed by peer" and exit 1) as soon as it has made a
// marker, and it fails only once their agent has reaped them: the echoes
// are always published first.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/socket.h"
#include "distrun/testing/command.h"
#include "distrun/testing/launcher_fixture.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// One kind of first failure: the shell that ends the failing rank, and
// what the job exits with.
struct FirstFailure {
  const char* name;
  const char* fail;
  int exitCode;
  const char* how;  // in the report's header
};

void PrintTo(const FirstFailure& kind, std::ostream* out) { *out << kind.name; }

const FirstFailure kKinds[] = {
    {"IoError",
     "echo 'distrun: error: snapshot run.snap: cannot create run.snap.tmp.1: No space left on "
     "device' >&2; exit 74",
     74, "exit code 74"},
    {"Exception",
     "echo 'Traceback (most recent call last):' >&2; echo 'ValueError: bad batch' >&2; exit 1", 1,
     "exit code 1"},
    {"Crash", "kill -SEGV $$", 128 + SIGSEGV, "killed by signal 11 (SIGSEGV)"},
    {"Signal", "kill -KILL $$", 128 + SIGKILL, "killed by signal 9 (SIGKILL)"},
};

class RootCauseProcessTest : public LauncherFixture,
                             public ::testing::WithParamInterface<FirstFailure> {
 protected:
  // The workers' script: rank `failing` makes the marker, waits until the
  // echo ranks' processes are gone (reaped by their agent, which published
  // them), then runs `fail`; every other rank waits for the marker and
  // exits as an echo: odd ranks 69 with distrun's line, even ones 1 with
  // Gloo's.
  std::string script(int failing, const std::string& fail) const {
    std::string d = quote(dir_);
    std::string text =
        "d=" + d + "\necho $$ >> $d/pids\n" + "if [ $RANK = " + std::to_string(failing) +
        " ]; then\n"
        "  touch $d/marker\n"
        "  for r in $(seq 0 $(($WORLD_SIZE - 1))); do\n"
        "    [ $r = $RANK ] && continue\n"
        "    while [ ! -s $d/pid_$r ]; do sleep 0.05; done\n"
        "    while kill -0 $(cat $d/pid_$r) 2>/dev/null; do sleep 0.05; done\n"
        "  done\n"
        "  sleep 0.3\n  " +
        fail +
        "\nfi\n"
        "echo $$ > $d/pid_$RANK.tmp && mv $d/pid_$RANK.tmp $d/pid_$RANK\n"
        "while [ ! -e $d/marker ]; do sleep 0.05; done\n"
        "if [ $(($RANK % 2)) = 1 ]; then\n"
        "  echo \"distrun: error: allreduce: lost rank " +
        std::to_string(failing) +
        " (host 127.0.0.1, pid 4711): Connection reset by peer\" >&2; exit 69\n"
        "fi\n"
        "echo 'RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection "
        "closed by peer [127.0.0.1]:28048' >&2\n"
        "exit 1\n";
    std::ofstream(path("worker.sh")) << text;
    return "sh " + quote(path("worker.sh"));
  }
};

TEST_P(RootCauseProcessTest, TheFailingRankIsNamedNotTheRanksThatLostIt) {
  const FirstFailure& kind = GetParam();
  CommandResult r = runCommand("timeout 120 " + distrun() + " run --nproc-per-node 3 --log-dir " +
                               quote(dir_) + " --rdzv-id cause " + script(0, kind.fail));
  EXPECT_EQ(r.exitCode, kind.exitCode) << r.err;
  EXPECT_THAT(r.err, HasSubstr("distrun: job cause failed (restart 0 of 0): root cause was rank 0 "
                               "(local rank 0) on node 0 (" +
                               thisHostName() + ")"));
  EXPECT_THAT(r.err, HasSubstr(kind.how));
  EXPECT_THAT(r.err, HasSubstr("distrun: ranks 1, 2 failed before it only because they lost a "
                               "peer: not the cause\n"));
  EXPECT_THAT(slurp(path("cause/failure.json")), HasSubstr("\"rank\":0,"));
  expectAllGone();
}

INSTANTIATE_TEST_SUITE_P(Kinds, RootCauseProcessTest, ::testing::ValuesIn(kKinds),
                         [](const auto& param) { return std::string(param.param.name); });

TEST_F(RootCauseProcessTest, ACauseOnNodeOneIsNamedByBothNodesAfterEchoesOnNodeZero) {
  int port = freePort();
  std::string flags = " --nnodes 2 --rdzv-endpoint 127.0.0.1:" + std::to_string(port) +
                      " --local-addr 127.0.0.1 --join-timeout 60 --rdzv-id two ";
  std::string worker = script(2, "echo 'OSError: [Errno 28] No space left on device' >&2; exit 74");
  int node0 = startCommand("env DISTRUN_TOKEN=t " + distrun() + " run --node-rank 0" + flags +
                               "--nproc-per-node 2 " + worker,
                           path("node0.log"));
  CommandResult node1 = runCommand("DISTRUN_TOKEN=t timeout 120 " + distrun() +
                                   " run --node-rank 1" + flags + "--nproc-per-node 1 " + worker);
  EXPECT_EQ(node1.exitCode, 74) << node1.err;
  EXPECT_EQ(waitCommand(node0), 74) << slurp(path("node0.log"));
  std::string log0 = slurp(path("node0.log"));
  EXPECT_THAT(log0,
              HasSubstr("root cause was rank 2 (local rank 0) on node 1 (" + thisHostName() + ")"));
  EXPECT_THAT(log0, HasSubstr("  | OSError: [Errno 28] No space left on device\n"));
  EXPECT_THAT(log0, HasSubstr("distrun: ranks 0, 1 failed before it only because they lost a "
                              "peer: not the cause\n"));
  EXPECT_THAT(node1.err, HasSubstr("distrun: node 1: stopped: rank 2 on node 1 failed\n"));
  expectAllGone();
}

TEST_F(RootCauseProcessTest, EchoesAloneAreReportedAsSuchWithTheFirstOne) {
  // Rank 0 is lost without a word (no marker: the echoes are told to go).
  std::string d = quote(dir_);
  std::ofstream(path("echo.sh")) << "echo $$ >> " << d
                                 << "/pids\n"
                                    "echo 'distrun: error: allreduce: lost rank 7 (host x, pid "
                                    "1): Connection reset by peer' >&2\nexit 69\n";
  CommandResult r = runCommand("timeout 120 " + distrun() + " run --nproc-per-node 2 sh " +
                               quote(path("echo.sh")));
  EXPECT_EQ(r.exitCode, 69) << r.err;
  EXPECT_THAT(r.err, HasSubstr("exit code 69"));
  EXPECT_THAT(r.err, HasSubstr("only lost a peer, and no rank reported an error of its own"));
  EXPECT_THAT(r.err, Not(HasSubstr("not the cause")));
  expectAllGone();
}

TEST_F(RootCauseProcessTest, AnEchoWhileTheOthersRunOnStopsThemAfterTheWait) {
  // Rank 1 lost a peer; rank 0 neither fails nor finishes: after the wait
  // the agent stops it and settles on the echo.
  std::ofstream(path("w.sh")) << "echo $$ >> " << quote(dir_) << "/pids\n"
                              << "[ $RANK = 0 ] && exec sleep 300\n"
                                 "echo 'RuntimeError: Connection reset by peer' >&2; exit 1\n";
  CommandResult r =
      runCommand("timeout 120 " + distrun() + " run --nproc-per-node 2 sh " + quote(path("w.sh")));
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("distrun: node 0: a rank lost its peer and no rank reported an "
                               "error of its own within 5 s: stopping the workers\n"));
  EXPECT_THAT(r.err, HasSubstr("root cause was rank 1 (local rank 1)"));
  EXPECT_THAT(r.err, HasSubstr("only lost a peer"));
  expectAllGone();
}

// PyTorch's @record: rank 1 raises, its error file is written, and its exit
// handlers take a while; meanwhile rank 0's collective fails and it exits 2
// with its own words. Rank 0 is reaped first, yet rank 1 is the cause.
TEST_F(RootCauseProcessTest, AFailureAfterAnotherRankRaisedIsItsEcho) {
  std::ofstream(path("w.sh"))
      << "d=" << quote(dir_) << "\necho $$ >> $d/pids\n"
      << "if [ $RANK = 1 ]; then\n"
         "  printf '{\"message\": {\"message\": \"ValueError: bad batch\", \"extraInfo\": "
         "{\"py_callstack\": \"Traceback (most recent call last):\", \"timestamp\": \"%s\"}}}' "
         "$(date +%s) > \"$TORCHELASTIC_ERROR_FILE\"\n"
         "  touch $d/raised; sleep 1.5; exit 1\n"
         "fi\n"
         "while [ ! -e $d/raised ]; do sleep 0.05; done\n"
         "sleep 0.2; echo 'all_reduce failed: giving up' >&2; exit 2\n";
  CommandResult r = runCommand("timeout 120 " + distrun() + " run --nproc-per-node 2 --log-dir " +
                               quote(dir_) + " --rdzv-id raised sh " + quote(path("w.sh")));
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("root cause was rank 1 (local rank 1)"));
  EXPECT_THAT(r.err, HasSubstr("ValueError: bad batch"));
  EXPECT_THAT(r.err, HasSubstr("distrun: rank 0 failed before it only because it lost a peer: "
                               "not the cause\n"));
  EXPECT_THAT(slurp(path("raised/failure.json")), HasSubstr("\"rank\":1,"));
  expectAllGone();
}

// End to end: two distrun-train ranks; rank 0 writes a snapshot every 5
// steps into a small tmpfs that fills up after its first one. Rank 0 exits
// 74 naming the file; rank 1, in an allreduce with it, exits 69 ("lost rank
// 0"), often before rank 0 has exited. The job exits 74 naming rank 0.
TEST_F(RootCauseProcessTest, ASnapshotOnAFullDiskIsNamedOverTheRankThatLostIt) {
  const std::string mnt = path("mnt");
  std::filesystem::create_directories(mnt);
  if (runCommand("mount -t tmpfs -o size=8m tmpfs " + quote(mnt)).exitCode != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs (needs root)";
  }
  const std::string snapshot = mnt + "/run.snap";
  int agent = startCommand("timeout 300 " + distrun() + " run --nproc-per-node 2 " +
                               quote(binaryPath("distrun-train")) +
                               " linear --epochs 100000 --progress epochs --save-every-steps 5 "
                               "--snapshot " +
                               quote(snapshot),
                           path("log"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (!std::filesystem::exists(snapshot) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  bool written = std::filesystem::exists(snapshot);
  runCommand("head -c 64M /dev/zero > " + quote(mnt + "/filler"));  // fails once full
  int code = waitCommand(agent);
  runCommand("umount -l " + quote(mnt));
  ASSERT_TRUE(written) << "no snapshot within 240 s: " << slurp(path("log"));
  std::string log = slurp(path("log"));
  EXPECT_EQ(code, 74) << log;
  EXPECT_THAT(log,
              HasSubstr("root cause was rank 0 (local rank 0) on node 0 (" + thisHostName() + ")"));
  EXPECT_THAT(log, HasSubstr("  | distrun: error: snapshot " + snapshot));
  EXPECT_THAT(log, HasSubstr("No space left on device"));
}

}  // namespace
}  // namespace distrun::testing
