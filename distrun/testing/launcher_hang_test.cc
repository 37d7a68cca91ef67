// `distrun run --hang-timeout` with shell workers, one of which stops
// itself (SIGSTOP) while the others wait (label: multiproc): the job ends
// with exit 75 naming that rank, on one node and across two agents, and no
// process is left. Durations are bounded, never asserted.
#include <signal.h>
#include <unistd.h>

#include <filesystem>

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
using ::testing::Not;

// Jobs whose ranks stop themselves (SIGSTOP) or wait without progress.
class LauncherHangTest : public LauncherFixture {
 protected:
  // The pid rank `rank` wrote to its own file.
  int pidOfRank(int rank) {
    std::vector<int> pids = readInts(path("rank" + std::to_string(rank)));
    return pids.empty() ? 0 : pids.front();
  }
  // Rank `rank` stops itself (after `delay`); the others wait, as ranks
  // blocked on a peer do, without CPU time or output.
  std::string stopRank(int rank, const std::string& delay = "0") const {
    return worker("echo $$ > " + path("rank$RANK") + "; if [ $RANK = " + std::to_string(rank) +
                  " ]; then sleep " + delay + "; kill -STOP $$; fi; sleep 300");
  }
};

TEST_F(LauncherHangTest, AStoppedRankEndsTheJobWithExit75NamingIt) {
  CommandResult r = runCommand("timeout 120 " + distrun() +
                               " run --nproc-per-node 3 --hang-timeout 2 --rdzv-id hung "
                               "--log-dir " +
                               quote(dir_) + " " + stopRank(1));
  EXPECT_EQ(r.exitCode, 75) << r.err;
  int pid = pidOfRank(1);
  EXPECT_THAT(r.err, HasSubstr("distrun: job hung failed (restart 0 of 0): root cause was "
                               "rank 1 (local rank 1) on node 0 (" +
                               thisHostName() + "), pid " + std::to_string(pid) +
                               ", stopped by a signal (state T), no "
                               "progress for "));
  EXPECT_THAT(r.err, HasSubstr(" s (--hang-timeout 2), at "));
  EXPECT_THAT(r.err, HasSubstr("distrun: no progress: rank 1's processes used no CPU time and "
                               "wrote no output for "));
  EXPECT_THAT(r.err, HasSubstr("distrun: rank 1's threads wait in the kernel at: "
                               "do_signal_stop (main thread)\n"));
  EXPECT_THAT(r.err, HasSubstr("'py-spy dump --pid " + std::to_string(pid) + "'"));
  std::string report = log("hung/failure.json");
  EXPECT_THAT(report, HasSubstr("\"rank\":1,"));
  EXPECT_THAT(report, HasSubstr("\"stopped\":true"));
  expectAllGone();
}

TEST_F(LauncherHangTest, AnIdleRankIsNamedWhileAnotherWritesOutput) {
  CommandResult r = runCommand(
      "timeout 120 " + distrun() + " run --nproc-per-node 2 --hang-timeout 2 " +
      worker("if [ $RANK = 0 ]; then while :; do echo tick; sleep 0.2; done; fi; sleep 300"));
  EXPECT_EQ(r.exitCode, 75) << r.err;
  EXPECT_THAT(r.err, HasSubstr("root cause was rank 1 (local rank 1) on node 0"));
  EXPECT_THAT(r.err, Not(HasSubstr("stopped by a signal")));
  expectAllGone();
}

// Rank 1 reports once on DISTRUN_PROGRESS_FD, then spins (as a rank polling
// for a peer that is gone does): its CPU time is no progress now.
TEST_F(LauncherHangTest, ASpinningRankThatStoppedReportingIsNamed) {
  CommandResult r = runCommand(
      "timeout 120 " + distrun() + " run --nproc-per-node 2 --hang-timeout 2 " +
      worker("test \"$DISTRUN_PROGRESS_FD\" = 3 || exit 9; if [ $RANK = 1 ]; then "
             "echo . >&3; while :; do :; done; fi; while :; do echo . >&3; sleep 0.2; done"));
  EXPECT_EQ(r.exitCode, 75) << r.err;
  EXPECT_THAT(r.err, HasSubstr("root cause was rank 1 (local rank 1) on node 0"));
  EXPECT_THAT(r.err, HasSubstr("distrun: no progress: rank 1 reported none on "
                               "DISTRUN_PROGRESS_FD for "));
  expectAllGone();
}

// Ranks that report every 0.2 s while using no CPU time and writing no
// output make progress; the job ends by itself, 0.
TEST_F(LauncherHangTest, RanksThatReportAreNotHungWithoutCpuTimeOrOutput) {
  CommandResult r =
      runCommand("timeout 120 " + distrun() + " run --nproc-per-node 2 --hang-timeout 2 " +
                 worker("i=0; while [ $i -lt 25 ]; do echo . >&3; sleep 0.2; i=$((i+1)); done"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  expectAllGone();
}

// Node 0's ranks wait from the start; node 1's rank 2 stops itself a
// second later, so node 0 notices first: both agents name rank 2.
TEST_F(LauncherHangTest, TwoAgentsNameTheStoppedRankOfNodeOne) {
  int port = freePort();
  int node0 = startCommand("env DISTRUN_TOKEN=t " + distrun() + " run " + twoNodeFlags(0, port) +
                               "--nproc-per-node 2 --hang-timeout 3 " + stopRank(2, "1"),
                           path("node0.log"));
  CommandResult node1 =
      runCommand("DISTRUN_TOKEN=t timeout 120 " + distrun() + " run " + twoNodeFlags(1, port) +
                 "--nproc-per-node 1 --hang-timeout 3 " + stopRank(2, "1"));
  EXPECT_EQ(node1.exitCode, 75) << node1.err;
  EXPECT_EQ(waitCommand(node0), 75) << log("node0.log");
  EXPECT_THAT(
      log("node0.log"),
      HasSubstr("root cause was rank 2 (local rank 0) on node 1 (" + thisHostName() + "), pid " +
                std::to_string(pidOfRank(2)) + ", stopped by a signal (state T)"));
  EXPECT_THAT(node1.err, HasSubstr("distrun: node 1: stopped: rank 2 on node 1 failed\n"));
  expectAllGone();
}

// distrun's own collectives: two ranks of distrun-bench in an endless
// all_reduce loop; rank 1 is stopped from outside (SIGSTOP) while rank 0
// waits for it in the next call, through the node's shared memory: rank 1
// is named, not the rank waiting for it.
TEST_F(LauncherHangTest, ARankStoppedInDistrunsOwnCollectivesIsNamed) {
  const std::string bench = quote(binaryPath("distrun-bench")) +
                            " all_reduce -b 4K -e 4K -n 1000000000 -w 1 -c 0 --backend gloo";
  int agent =
      startCommand("timeout 120 " + distrun() + " run --nproc-per-node 2 --hang-timeout 3 " +
                       worker("echo $$ > " + path("rank$RANK") + "; exec " + bench),
                   path("bench.log"));
  ASSERT_TRUE(waitForLines(path("rank1"), 1, 60)) << log("bench.log");
  const int pid = pidOfRank(1);
  ::usleep(500 * 1000);  // well into the loop
  ::kill(pid, SIGSTOP);
  EXPECT_EQ(waitCommand(agent), 75) << log("bench.log");
  EXPECT_THAT(log("bench.log"),
              HasSubstr("root cause was rank 1 (local rank 1) on node 0 (" + thisHostName() +
                        "), pid " + std::to_string(pid) + ", stopped by a signal (state T)"));
  expectAllGone();
}

}  // namespace
}  // namespace distrun::testing
