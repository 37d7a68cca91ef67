#include "distrun/launch/supervisor.h"
#include "distrun/launch/supervisor_testing.h"

#include <csignal>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::launch {
namespace {

using supervisor_testing::exitOf;
using supervisor_testing::kPort;
using supervisor_testing::names;
using supervisor_testing::pidOf;
using supervisor_testing::printed;

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using Phase = Supervisor::Phase;

AgentConfig config(int workers, int maxRestarts = 0) {
  AgentConfig c;
  c.layout.localWorldSize = workers;
  c.maxRestarts = maxRestarts;
  c.termTimeout = 25s;
  c.runId = "job";
  c.storeHost = "head";
  return c;
}

AgentConfig nodeOfTwo(int nodeRank, int workers) {
  AgentConfig c = config(workers);
  c.layout.numNodes = 2;
  c.layout.nodeRank = nodeRank;
  return c;
}

// The event of the (only) PublishEvent in `actions`: what the store hands
// back to every agent.
JobEvent published(const Actions& actions) {
  for (const Action& a : actions) {
    if (const auto* p = std::get_if<PublishEvent>(&a)) return p->event;
  }
  ADD_FAILURE() << "nothing published";
  return JobEvent{JobEvent::Kind::kComplete, ""};
}

class SupervisorTest : public ::testing::Test {
 protected:
  TimePoint now() const { return clock_.now(); }

  // Takes `s` through a rendezvous of round `round` and starts its workers.
  void startRound(Supervisor& s, int round, int firstRank = 0, int worldSize = 2) {
    rdzv::World world{round, 1, worldSize, firstRank, "head", 29500};
    EXPECT_THAT(names(s.rendezvousCompleted(world, now())),
                ElementsAre("start round " + std::to_string(round)));
    for (int local = 0; local < workers_; ++local) {
      EXPECT_THAT(s.workerStarted(local, pidOf(firstRank + local), now()), IsEmpty());
    }
    EXPECT_EQ(s.phase(), Phase::kRunning);
  }
  void startJob(Supervisor& s, int firstRank = 0, int worldSize = 2) {
    EXPECT_THAT(names(s.start(now())), ElementsAre("join round 0"));
    startRound(s, 0, firstRank, worldSize);
  }

  FakeClock clock_;
  int workers_ = 2;
};

TEST_F(SupervisorTest, EveryWorkerExitingZeroCompletesTheJob) {
  Supervisor s(config(2), kPort);
  startJob(s);
  EXPECT_THAT(s.workerExited(exitOf(0, 0, 0), now()), IsEmpty());
  Actions last = s.workerExited(exitOf(1, 1, 0), now());
  EXPECT_THAT(names(last), ElementsAre("mark node done"));
  Actions done = s.nodesDone(1, now());
  EXPECT_THAT(names(done), ElementsAre("publish complete"));
  EXPECT_THAT(names(s.storeEvent(published(done), now())),
              ElementsAre("end round", "leave job", "exit 0"));
  EXPECT_EQ(s.phase(), Phase::kEnded);
}

TEST_F(SupervisorTest, ANodeDoneFirstWaitsForTheJobCompleteEvent) {
  Supervisor s(nodeOfTwo(1, 2), kPort);
  startJob(s, 2, 4);
  s.workerExited(exitOf(2, 0, 0, 0, 1), now());
  EXPECT_THAT(names(s.workerExited(exitOf(3, 1, 0, 0, 1), now())), ElementsAre("mark node done"));
  EXPECT_THAT(s.nodesDone(1, now()), IsEmpty()) << "node 0 has not finished";
  EXPECT_EQ(s.phase(), Phase::kRunning);
  // The last node to finish publishes the end; this node reads it.
  EXPECT_THAT(names(s.jobCompleted(now())), ElementsAre("end round", "leave job", "exit 0"));
}

// A failure of local rank 1 in round `round`, up to its end: the worker
// fails, is published and read back, and local rank 0 is stopped by TERM.
Actions failRound(Supervisor& s, TimePoint now) {
  Actions failed = s.workerExited(exitOf(1, 1, 5), now);
  EXPECT_THAT(names(failed),
              ElementsAre("signal 15", "wake at 25000 ms", "publish failure of rank 1"));
  EXPECT_THAT(s.storeEvent(published(failed), now), IsEmpty());  // rank 0 runs
  EXPECT_EQ(s.phase(), Phase::kStopping);
  return s.workerExited(exitOf(0, 0, 0, SIGTERM), now);
}

class RestartTest : public SupervisorTest, public ::testing::WithParamInterface<int> {};

TEST_P(RestartTest, RestartsExactlyMaxRestartsTimesThenReportsTheWorkersCode) {
  const int maxRestarts = GetParam();
  Supervisor s(config(2, maxRestarts), kPort);
  EXPECT_THAT(names(s.start(now())), ElementsAre("join round 0"));
  for (int round = 0; round < maxRestarts; ++round) {
    startRound(s, round);
    Actions end = failRound(s, now());
    EXPECT_THAT(names(end),
                ElementsAre("end round",
                            fmt::format("print distrun: node 0: rank 1 failed (exit code 5); "
                                        "restarting all workers (restart {} of {})\n",
                                        round + 1, maxRestarts),
                            fmt::format("join round {}", round + 1)));
    EXPECT_EQ(s.phase(), Phase::kJoining);
    EXPECT_EQ(s.round(), round + 1) << "the restart count handed to the next round";
  }
  startRound(s, maxRestarts);
  Actions end = failRound(s, now());
  EXPECT_THAT(names(end), ElementsAre("end round", StartsWith("print "), "leave job", "exit 5"));
  EXPECT_THAT(printed(end),
              StartsWith(fmt::format("distrun: job job failed (restart {} of {}): root cause "
                                     "was rank 1 (local rank 1) on node 0 (node0), pid 1001, "
                                     "exit code 5, at 2026-01-02T03:04:05Z\n",
                                     maxRestarts, maxRestarts)));
  EXPECT_THAT(printed(end), HasSubstr("  | boom\n"));
  EXPECT_EQ(s.phase(), Phase::kEnded);
}

INSTANTIATE_TEST_SUITE_P(MaxRestarts, RestartTest, ::testing::Values(0, 1, 2, 3));

TEST_F(SupervisorTest, TerminalSignalDuringTheRestartRendezvousEndsTheAgent) {
  Supervisor s(config(2, 3), kPort);
  startJob(s);
  EXPECT_THAT(names(failRound(s, now())), ::testing::Contains("join round 1"));
  EXPECT_THAT(s.signalReceived(SIGUSR1, now()), IsEmpty()) << "no workers to tell";
  Actions interrupted = s.signalReceived(SIGINT, now());
  EXPECT_THAT(names(interrupted),
              ElementsAre(StartsWith("print "), "interrupt rendezvous", "exit 130"));
  EXPECT_EQ(printed(interrupted),
            "distrun: node 0: interrupted by SIGINT during the rendezvous: no worker was "
            "started\n");
  EXPECT_EQ(s.phase(), Phase::kEnded);
  EXPECT_THAT(s.signalReceived(SIGTERM, now()), IsEmpty());
}

TEST_F(SupervisorTest, SecondSignalDuringTheGraceKillsAtOnce) {
  Supervisor s(config(2), kPort);
  startJob(s);
  Actions first = s.signalReceived(SIGINT, now());
  EXPECT_THAT(names(first), ElementsAre(StartsWith("print "), "signal 2", "wake at 25000 ms",
                                        "publish signal 2"));
  EXPECT_EQ(printed(first),
            "distrun: node 0: job interrupted by SIGINT: stopping the workers (SIGKILL after 25 "
            "s)\n");
  EXPECT_THAT(s.storeEvent(published(first), now()), IsEmpty()) << "already taken";
  clock_.advance(1s);
  Actions second = s.signalReceived(SIGTERM, now());
  EXPECT_THAT(names(second), ElementsAre(StartsWith("print "), "kill", "publish signal 15"));
  EXPECT_EQ(printed(second),
            "distrun: node 0: killing rank 0 (pid 1000), rank 1 (pid 1001) with SIGKILL: a "
            "second signal (SIGTERM)\n");
  s.workerExited(exitOf(0, 0, 0, SIGKILL), now());
  EXPECT_THAT(names(s.workerExited(exitOf(1, 1, 0, SIGKILL), now())),
              ElementsAre("end round", "leave job", "exit 130"));
}

// `timeout -s INT` sends its signal to the agent and to its group: the
// agent reads it twice, microseconds apart. That is one Ctrl-C, with its
// grace; the same signal a moment later is a second one.
TEST_F(SupervisorTest, OneSignalSentToTheAgentAndItsGroupIsOneSignal) {
  Supervisor s(config(2), kPort);
  startJob(s);
  Actions first = s.signalReceived(SIGINT, now());
  EXPECT_THAT(names(first), ElementsAre(StartsWith("print "), "signal 2", "wake at 25000 ms",
                                        "publish signal 2"));
  clock_.advance(1ms);
  EXPECT_THAT(s.signalReceived(SIGINT, now()), IsEmpty()) << "the same delivery";
  clock_.advance(kSameSignalDelivery);
  EXPECT_THAT(names(s.signalReceived(SIGINT, now())),
              ElementsAre(StartsWith("print "), "kill", "publish signal 2"));
}

TEST_F(SupervisorTest, WorkerIgnoringTermIsKilledWhenTheGraceEnds) {
  Supervisor s(config(2), kPort);
  startJob(s);
  clock_.advance(5s);
  Actions forwarded = s.signalReceived(SIGTERM, now());
  EXPECT_THAT(names(forwarded), ElementsAre(StartsWith("print "), "signal 15", "wake at 30000 ms",
                                            "publish signal 15"));
  EXPECT_THAT(s.signalPublished(SIGTERM, now()), IsEmpty());
  EXPECT_THAT(s.workerExited(exitOf(0, 0, 0, SIGTERM), now()), IsEmpty());
  clock_.advance(25s - 1ms);
  EXPECT_THAT(s.deadlinePassed(now()), IsEmpty()) << "the grace is not over";
  clock_.advance(1ms);
  Actions killed = s.deadlinePassed(now());
  EXPECT_THAT(names(killed), ElementsAre(StartsWith("print "), "kill"));
  EXPECT_EQ(printed(killed),
            "distrun: node 0: killing rank 1 (pid 1001) with SIGKILL: still running 25 s after "
            "SIGTERM (--term-timeout)\n");
  EXPECT_THAT(s.deadlinePassed(now()), IsEmpty()) << "killed once";
  EXPECT_THAT(names(s.workerExited(exitOf(1, 1, 0, SIGKILL), now())),
              ElementsAre("end round", "leave job", "exit 143"))
      << "the agent's signal decides the code, not the SIGKILL";
}

TEST_F(SupervisorTest, WorkersOutlivingTheGraceAfterAFailureAreNamedWhenKilled) {
  AgentConfig c = config(3);
  c.termTimeout = 1500ms;
  Supervisor s(c, kPort);
  workers_ = 3;
  startJob(s, 4, 6);
  Actions failed = s.workerExited(exitOf(4, 0, 1), now());
  EXPECT_EQ(printed(failed), "") << "a failure says nothing until the report";
  clock_.advance(1500ms);
  Actions killed = s.deadlinePassed(now());
  EXPECT_THAT(names(killed), ElementsAre(StartsWith("print "), "kill"));
  EXPECT_EQ(printed(killed),
            "distrun: node 0: killing rank 5 (pid 1005), rank 6 (pid 1006) with SIGKILL: still "
            "running 1.5 s after SIGTERM (--term-timeout)\n");
}

// A Python worker that cannot import torch: the report says which Python
// ran, where it came from, and (last) how to choose another.
TEST_F(SupervisorTest, APythonFailureNamesItsInterpreterAndAMissingModule) {
  AgentConfig c = config(1);
  c.python = "/usr/bin/python3";
  c.pythonSource = "the first python3 on PATH";
  Supervisor s(c, kPort);
  workers_ = 1;
  startJob(s, 0, 1);
  WorkerFailure failed = exitOf(0, 0, 1);
  failed.stderrTail = {"Traceback (most recent call last):", "    import torch",
                       "ModuleNotFoundError: No module named 'torch'"};
  JobEvent event = published(s.workerExited(failed, now()));
  EXPECT_EQ(WorkerFailure::fromJson(event.payload).python,
            "/usr/bin/python3 (the first python3 on PATH)");
  std::string report = printed(s.storeEvent(event, now()));
  EXPECT_THAT(report,
              HasSubstr("\ndistrun: rank 0 ran Python /usr/bin/python3 (the first python3 on "
                        "PATH)\ndistrun: last lines of rank 0's stderr:\n"));
  EXPECT_THAT(report, ::testing::EndsWith(
                          "  | ModuleNotFoundError: No module named 'torch'\n"
                          "distrun: Python /usr/bin/python3 (the first python3 on PATH) cannot "
                          "import 'torch': install it for that Python, or choose another with "
                          "--python PATH or DISTRUN_PYTHON=PATH\n"));
}

TEST_F(SupervisorTest, AnotherFailureSaysNothingOfPython) {
  Supervisor s(config(1), kPort);
  workers_ = 1;
  startJob(s, 0, 1);
  WorkerFailure failed = exitOf(0, 0, 1);
  failed.stderrTail = {"ModuleNotFoundError: No module named 'torch'"};
  std::string report = printed(s.storeEvent(published(s.workerExited(failed, now())), now()));
  EXPECT_THAT(report, ::testing::Not(HasSubstr("Python"))) << "not a Python program";
}

TEST_F(SupervisorTest, UserSignalsAreForwardedAndTheJobGoesOn) {
  Supervisor s(config(2), kPort);
  startJob(s);
  Actions received = s.signalReceived(SIGUSR1, now());
  EXPECT_THAT(names(received), ElementsAre("publish signal 10"));
  EXPECT_THAT(names(s.storeEvent(published(received), now())), ElementsAre("signal 10"));
  EXPECT_THAT(names(s.signalPublished(SIGUSR2, now())), ElementsAre("signal 12"));
  EXPECT_THAT(s.signalReceived(SIGCHLD, now()), IsEmpty());
  EXPECT_EQ(s.phase(), Phase::kRunning);
  s.workerExited(exitOf(0, 0, 0), now());
  EXPECT_THAT(names(s.workerExited(exitOf(1, 1, 0), now())), ElementsAre("mark node done"));
}

TEST_F(SupervisorTest, SignalFromAPeerStopsThisNodeWithItsCode) {
  Supervisor s(nodeOfTwo(1, 1), kPort);
  workers_ = 1;
  startJob(s, 1, 2);
  Actions fromPeer = s.storeEvent(JobEvent{JobEvent::Kind::kSignal, "15"}, now());
  EXPECT_THAT(names(fromPeer), ElementsAre(StartsWith("print "), "signal 15", "wake at 25000 ms"));
  EXPECT_EQ(printed(fromPeer),
            "distrun: node 1: job interrupted by SIGTERM: stopping the workers (SIGKILL after 25 "
            "s)\n");
  EXPECT_THAT(names(s.workerExited(exitOf(1, 0, 0, SIGTERM, 1), now())),
              ElementsAre("end round", "leave job", "exit 143"));
}

TEST_F(SupervisorTest, StoreLostMidRunStopsTheWorkersAndEndsWithARendezvousError) {
  Supervisor s(nodeOfTwo(1, 2), kPort);
  startJob(s, 2, 4);
  EXPECT_THAT(names(s.storeLost("connection reset by peer", now())),
              ElementsAre("signal 15", "wake at 25000 ms"));
  EXPECT_THAT(s.storeLost("closed", now()), IsEmpty());
  s.workerExited(exitOf(2, 0, 0, SIGTERM, 1), now());
  EXPECT_THAT(names(s.workerExited(exitOf(3, 1, 143, 0, 1), now())),
              ElementsAre("end round",
                          "error node 1 lost the rendezvous store at head:29400 (did node "
                          "0's agent or its host die?): connection reset by peer"));
}

// The cause as the store's connection words it names the store already:
// the error says so once.
TEST_F(SupervisorTest, AStoreLostInItsOwnWordsIsNamedOnce) {
  Supervisor s(nodeOfTwo(1, 2), kPort);
  startJob(s, 2, 4);
  s.storeLost("lost the rendezvous store at head:29400: Connection timed out", now());
  s.workerExited(exitOf(2, 0, 0, SIGTERM, 1), now());
  EXPECT_THAT(names(s.workerExited(exitOf(3, 1, 143, 0, 1), now())),
              ElementsAre("end round",
                          "error node 1 lost the rendezvous store at head:29400: Connection timed "
                          "out (did node 0's agent or its host die?)"));
}

TEST_F(SupervisorTest, StoreLostOnceTheEndIsKnownChangesNothing) {
  Supervisor s(config(2), kPort);
  startJob(s);
  Actions failed = s.workerExited(exitOf(0, 0, 7), now());
  s.storeEvent(published(failed), now());
  EXPECT_THAT(s.storeLost("node 0 left", now()), IsEmpty());
  EXPECT_THAT(names(s.workerExited(exitOf(1, 1, 0, SIGTERM), now())),
              ElementsAre("end round", StartsWith("print "), "leave job", "exit 7"));
}

TEST_F(SupervisorTest, PeerFailureFromTheStoreStopsThisNodeAndIsReported) {
  AgentConfig c = nodeOfTwo(1, 2);
  c.logDir = "/logs";
  Supervisor s(c, kPort);
  startJob(s, 2, 4);
  WorkerFailure peer = exitOf(0, 0, 0, SIGSEGV, 0);
  // A cause without an exception of its own: another node's may still
  // correct it, so the round ends once every node is done (10 s +
  // --term-timeout at the most).
  EXPECT_THAT(names(s.failurePublished(peer, now())),
              ElementsAre("wake at 35000 ms", "signal 15", "wake at 25000 ms"));
  s.workerExited(exitOf(2, 0, 0, SIGTERM, 1), now());
  EXPECT_THAT(names(s.workerExited(exitOf(3, 1, 1, 0, 1), now())), ElementsAre("mark node done"));
  Actions end = s.storeEvent(JobEvent{JobEvent::Kind::kComplete, ""}, now());
  EXPECT_THAT(names(end),
              ElementsAre("end round", "print distrun: node 1: stopped: rank 0 on node 0 failed\n",
                          "leave job", "write failure report /logs/job/failure.json", "exit 139"));
  EXPECT_EQ(std::get<WriteFailureReport>(end[3]).json, peer.toJson() + "\n");
}

TEST_F(SupervisorTest, TwoWorkersFailingInOnePollRoundReportTheFirstPublished) {
  Supervisor s(config(3), kPort);
  workers_ = 3;
  startJob(s, 0, 3);
  Actions first = s.workerExited(exitOf(2, 2, 3), now());
  EXPECT_THAT(names(first),
              ElementsAre("signal 15", "wake at 25000 ms", "publish failure of rank 2"));
  EXPECT_THAT(s.workerExited(exitOf(0, 0, 4), now()), IsEmpty())
      << "stopped by the first: not published, not a root cause";
  s.storeEvent(published(first), now());
  Actions end = s.workerExited(exitOf(1, 1, 0, SIGTERM), now());
  EXPECT_THAT(names(end), ElementsAre("end round", StartsWith("print "), "leave job", "exit 3"));
  EXPECT_THAT(printed(end), HasSubstr("root cause was rank 2 (local rank 2)"));
}

TEST_F(SupervisorTest, TheFirstFailureInTheStoresOrderIsTheRootCause) {
  // This node's failure is published, but another node's was first in the
  // store's sequence: every node reports the other one.
  Supervisor s(nodeOfTwo(0, 2), kPort);
  startJob(s, 0, 4);
  Actions mine = s.workerExited(exitOf(1, 1, 4), now());
  WorkerFailure theirs = exitOf(3, 1, 9, 0, 1);
  EXPECT_THAT(names(s.storeEvent(JobEvent{JobEvent::Kind::kFailure, theirs.toJson()}, now())),
              ElementsAre("wake at 35000 ms"))
      << "stopping already; ends once every node is done";
  EXPECT_THAT(s.storeEvent(published(mine), now()), IsEmpty());
  EXPECT_THAT(names(s.workerExited(exitOf(0, 0, 0, SIGTERM), now())),
              ElementsAre("mark node done"));
  Actions end = s.storeEvent(JobEvent{JobEvent::Kind::kComplete, ""}, now());
  EXPECT_THAT(names(end), ElementsAre("end round", StartsWith("print "), "leave job", "exit 9"));
  EXPECT_THAT(printed(end), HasSubstr("root cause was rank 3 (local rank 1) on node 1"));
  EXPECT_THAT(printed(end), ::testing::Not(HasSubstr("rank 1 (local rank 1)")));
}

// torchrun's order: the failure whose @record error file is earliest is
// the root cause, whatever the store's order; the report gives the
// exception's own words and traceback, which cross nodes in the record.
TEST_F(SupervisorTest, TheEarliestErrorFileIsTheRootCauseInItsOwnWords) {
  Supervisor s(nodeOfTwo(0, 2), kPort);
  startJob(s, 0, 4);
  WorkerFailure later = exitOf(1, 1, 1);
  later.errorMessage = "RuntimeError: NCCL communicator was aborted";
  later.errorTimestamp = 1764640009;
  WorkerFailure first = exitOf(3, 1, 1, 0, 1);
  first.errorMessage = "ValueError: bad batch";
  first.errorTraceback = {"Traceback (most recent call last):", "  File \"train.py\", line 9",
                          "ValueError: bad batch"};
  first.errorTimestamp = 1764640003;
  WorkerFailure crossed = WorkerFailure::fromJson(first.toJson());
  EXPECT_EQ(crossed.errorTraceback, first.errorTraceback);
  EXPECT_EQ(crossed.errorTimestamp, 1764640003);
  s.storeEvent(published(s.workerExited(later, now())), now());
  s.storeEvent(JobEvent{JobEvent::Kind::kFailure, first.toJson()}, now());
  std::string report = printed(s.workerExited(exitOf(0, 0, 0, SIGTERM), now()));
  EXPECT_THAT(report, HasSubstr("root cause was rank 3 (local rank 1) on node 1"));
  EXPECT_THAT(report, HasSubstr("\ndistrun: rank 3 raised ValueError: bad batch (its error file, "
                                "TORCHELASTIC_ERROR_FILE)\n  | Traceback (most recent call "
                                "last):\n  |   File \"train.py\", line 9\n  | ValueError: bad "
                                "batch\n"));
  EXPECT_THAT(report, ::testing::Not(HasSubstr("last lines of rank 3's stderr")));
}

TEST_F(SupervisorTest, SignalAfterThisNodeFinishedEndsTheJobWithIt) {
  Supervisor s(nodeOfTwo(0, 2), kPort);
  startJob(s, 0, 4);
  s.workerExited(exitOf(0, 0, 0), now());
  s.workerExited(exitOf(1, 1, 0), now());
  EXPECT_THAT(s.nodesDone(1, now()), IsEmpty());
  Actions hup = s.signalReceived(SIGHUP, now());
  EXPECT_THAT(names(hup), ElementsAre(StartsWith("print "), "signal 1", "wake at 25000 ms",
                                      "publish signal 1", "end round", "leave job", "exit 129"));
  EXPECT_EQ(printed(hup), "distrun: node 0: job interrupted by SIGHUP\n")
      << "no worker is left to stop";
}

TEST_F(SupervisorTest, EventsOfARoundThatIsOverAreIgnored) {
  Supervisor s(config(2, 1), kPort);
  startJob(s);
  failRound(s, now());
  EXPECT_EQ(s.phase(), Phase::kJoining);
  EXPECT_THAT(s.failurePublished(exitOf(0, 0, 2), now()), IsEmpty());
  EXPECT_THAT(s.jobCompleted(now()), IsEmpty());
  EXPECT_THAT(s.deadlinePassed(now() + 1h), IsEmpty());
  EXPECT_THROW(s.workerExited(exitOf(0, 0, 1), now()), EnforceError);
}

// The preemption protocol (docs/launcher.md, "Preemption"): 79 is
// "checkpointed, requeue me", never a failure.
constexpr int kCheckpointed = 79;

// Every worker of `s` (ranks first.. first+workers-1) exits `code`; the
// actions of the last exit.
Actions allExit(Supervisor& s, int first, int workers, int code, TimePoint now, int node = 0) {
  Actions last;
  for (int local = 0; local < workers; ++local) {
    last = s.workerExited(exitOf(first + local, local, code, 0, node), now);
  }
  return last;
}

TEST_F(SupervisorTest, UsrOneThenEveryWorkerExiting79EndsTheJobWith79AndNoRestart) {
  Supervisor s(config(2, 3), kPort);
  startJob(s);
  Actions received = s.signalReceived(SIGUSR1, now());
  EXPECT_THAT(names(received), ElementsAre("publish signal 10"));
  EXPECT_THAT(names(s.storeEvent(published(received), now())), ElementsAre("signal 10"));
  EXPECT_EQ(s.phase(), Phase::kRunning) << "USR1 is no interrupt";
  Actions first = s.workerExited(exitOf(0, 0, kCheckpointed), now());
  EXPECT_THAT(names(first), ElementsAre("publish checkpoint of rank 0"));
  EXPECT_THAT(s.storeEvent(published(first), now()), IsEmpty());
  EXPECT_THAT(names(s.workerExited(exitOf(1, 1, kCheckpointed), now())),
              ElementsAre("mark node done"));
  Actions done = s.nodesDone(1, now());
  Actions end = s.storeEvent(published(done), now());
  EXPECT_THAT(names(end), ElementsAre("end round", StartsWith("print "), "leave job", "exit 79"));
  EXPECT_EQ(printed(end),
            "distrun: node 0: job checkpointed on SIGUSR1: the workers exited 79 (rank 0 first); "
            "exit 79 asks the batch script to requeue it\n");
  EXPECT_EQ(s.round(), 0) << "no restart";
}

TEST_F(SupervisorTest, AWorkerExiting79WithoutAForwardedUsrOneIsCheckpointedToo) {
  Supervisor s(config(2, 3), kPort);
  startJob(s);
  EXPECT_THAT(names(s.workerExited(exitOf(1, 1, kCheckpointed), now())),
              ElementsAre("publish checkpoint of rank 1"));
  EXPECT_THAT(names(s.workerExited(exitOf(0, 0, 0), now())), ElementsAre("mark node done"));
  Actions end = s.jobCompleted(now());
  EXPECT_THAT(names(end), ElementsAre("end round", StartsWith("print "), "leave job", "exit 79"));
  EXPECT_EQ(printed(end),
            "distrun: node 0: job checkpointed: the workers exited 79 (rank 1 first, without a "
            "SIGUSR1 from distrun); exit 79 asks the batch script to requeue it\n");
}

TEST_F(SupervisorTest, AWorkerFailingAfterUsrOneIsAFailureAsAlways) {
  Supervisor s(config(2, 1), kPort);
  startJob(s);
  s.signalPublished(SIGUSR1, now());
  EXPECT_THAT(names(s.workerExited(exitOf(0, 0, kCheckpointed), now())),
              ElementsAre("publish checkpoint of rank 0"));
  Actions failed = s.workerExited(exitOf(1, 1, 5), now());
  EXPECT_THAT(names(failed),
              ElementsAre("signal 15", "wake at 25000 ms", "publish failure of rank 1"));
  Actions restart = s.storeEvent(published(failed), now());
  EXPECT_THAT(names(restart), ElementsAre("end round", StartsWith("print "), "join round 1"));
  EXPECT_THAT(printed(restart), HasSubstr("rank 1 failed (exit code 5); restarting all workers"));
}

TEST_F(SupervisorTest, AWorkerKilledByUsrOneIsAFailure) {
  Supervisor s(config(1), kPort);
  workers_ = 1;
  startJob(s, 0, 1);
  s.signalPublished(SIGUSR1, now());
  Actions killed = s.workerExited(exitOf(0, 0, 0, SIGUSR1), now());
  EXPECT_THAT(names(killed),
              ElementsAre("signal 15", "wake at 25000 ms", "publish failure of rank 0"));
  EXPECT_THAT(names(s.storeEvent(published(killed), now())),
              ElementsAre("end round", StartsWith("print "), "leave job", "exit 138"));
}

TEST_F(SupervisorTest, OnTwoNodesEveryAgentEndsWith79AndNoneReportsAFailure) {
  Supervisor node0(nodeOfTwo(0, 2), kPort);
  Supervisor node1(nodeOfTwo(1, 2), kPort);
  startJob(node0, 0, 4);
  startJob(node1, 2, 4);
  // srun signals both agents; each publishes, every agent forwards each.
  for (Supervisor* s : {&node0, &node1}) {
    Actions received = s->signalReceived(SIGUSR1, now());
    for (Supervisor* t : {&node0, &node1}) {
      EXPECT_THAT(names(t->storeEvent(published(received), now())), ElementsAre("signal 10"));
    }
  }
  Actions last1 = allExit(node1, 2, 2, kCheckpointed, now(), 1);
  EXPECT_THAT(names(last1), ElementsAre("mark node done"));
  Actions last0 = allExit(node0, 0, 2, kCheckpointed, now());
  EXPECT_THAT(names(last0), ElementsAre("mark node done"));
  EXPECT_THAT(node1.nodesDone(1, now()), IsEmpty());
  Actions done = node0.nodesDone(2, now());
  EXPECT_THAT(names(done), ElementsAre("publish complete"));
  for (Supervisor* s : {&node0, &node1}) {
    Actions end = s->storeEvent(published(done), now());
    EXPECT_THAT(names(end), ElementsAre("end round", StartsWith("print "), "leave job", "exit 79"));
    EXPECT_THAT(printed(end), HasSubstr("job checkpointed on SIGUSR1"));
  }
}

TEST_F(SupervisorTest, ANodeWhoseWorkersFinishedEndsWith79WhenAPeerCheckpointed) {
  Supervisor s(nodeOfTwo(1, 2), kPort);
  startJob(s, 2, 4);
  EXPECT_THAT(s.storeEvent(JobEvent{JobEvent::Kind::kCheckpoint, "0"}, now()), IsEmpty());
  allExit(s, 2, 2, 0, now(), 1);
  Actions end = s.jobCompleted(now());
  EXPECT_THAT(names(end), ElementsAre("end round", StartsWith("print "), "leave job", "exit 79"));
  EXPECT_THAT(printed(end), HasSubstr("(rank 0 first, without a SIGUSR1 from distrun)"));
}

}  // namespace
}  // namespace distrun::launch
