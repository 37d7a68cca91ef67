// Root causes over echoes: the Supervisors of a whole job, linked by the
// store's event sequence, in each order the events can come.
#include <csignal>
#include <memory>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/launch/supervisor.h"
#include "distrun/launch/supervisor_testing.h"

namespace distrun::launch {
namespace {

using supervisor_testing::exitOf;

using namespace std::chrono_literals;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

constexpr int kPeerLost = 69;
constexpr int kIo = 74;

// The agents of one job (`nodes` nodes of `workers` workers) and what the
// Agent does between them: published events are appended to one sequence,
// the done count is kept, and deliver() hands each agent the events it
// has not read yet, in order, as its watcher does.
class Job {
 public:
  Job(int nodes, int workers, int maxRestarts = 0) : workers_(workers) {
    for (int n = 0; n < nodes; ++n) {
      AgentConfig c;
      c.layout.numNodes = nodes;
      c.layout.nodeRank = n;
      c.layout.localWorldSize = workers;
      c.maxRestarts = maxRestarts;
      c.termTimeout = 25s;
      c.runId = "job";
      agents_.push_back(std::make_unique<Supervisor>(c, 29400));
      read_.push_back(0);
      log_.emplace_back();
      exit_.push_back(-1);
    }
    for (int n = 0; n < nodes; ++n) {
      carry(n, agents_[n]->start(now()));
      rdzv::World world{0, nodes, nodes * workers, n * workers, "head", 29500};
      carry(n, agents_[n]->rendezvousCompleted(world, now()));
      for (int local = 0; local < workers; ++local) {
        carry(n, agents_[n]->workerStarted(local, 1000 + n * workers + local, now()));
      }
    }
  }

  TimePoint now() const { return clock_.now(); }
  void advance(std::chrono::milliseconds by) { clock_.advance(by); }

  // Rank `rank` exits; returns what its agent answered.
  std::vector<std::string> exits(int rank, int code, int signal = 0,
                                 std::vector<std::string> tail = {"boom"}) {
    int node = rank / workers_;
    return carry(node,
                 agents_[node]->workerExited(
                     exitOf(rank, rank % workers_, code, signal, rank / workers_, tail), now()));
  }
  // The worker of `exit` exits so; returns what its agent answered.
  std::vector<std::string> exits(const WorkerFailure& exit) {
    return carry(exit.nodeRank, agents_[exit.nodeRank]->workerExited(exit, now()));
  }
  // Every agent reads the events it has not read yet.
  void deliverAll() {
    for (size_t n = 0; n < agents_.size(); ++n) deliver(static_cast<int>(n));
  }
  std::vector<std::string> deliver(int node) {
    std::vector<std::string> out;
    while (read_[node] < events_.size()) {
      JobEvent e = events_[read_[node]++];
      for (auto& line : carry(node, agents_[node]->storeEvent(e, now()))) out.push_back(line);
    }
    return out;
  }
  std::vector<std::string> deadline(int node) {
    return carry(node, agents_[node]->deadlinePassed(now()));
  }

  Supervisor& agent(int node) { return *agents_[node]; }
  // What agent `node` did, one describe() line per action, in order.
  const std::vector<std::string>& log(int node) const { return log_[node]; }
  std::string printed(int node) const { return printed_.count(node) ? printed_.at(node) : ""; }
  int exitCode(int node) const { return exit_[node]; }
  size_t events() const { return events_.size(); }

 private:
  std::vector<std::string> carry(int node, Actions actions) {
    std::vector<std::string> out;
    for (const Action& a : actions) {
      out.push_back(describe(a));
      log_[node].push_back(describe(a));
      if (const auto* p = std::get_if<PublishEvent>(&a)) events_.push_back(p->event);
      if (const auto* p = std::get_if<Print>(&a)) printed_[node] += p->text;
      if (const auto* e = std::get_if<Exit>(&a)) exit_[node] = e->code;
      if (std::holds_alternative<MarkNodeDone>(a)) {
        for (auto& line : carry(node, agents_[node]->nodesDone(++done_, now()))) {
          out.push_back(line);
        }
      }
    }
    return out;
  }

  int workers_;
  FakeClock clock_;
  std::vector<std::unique_ptr<Supervisor>> agents_;
  std::vector<JobEvent> events_;
  std::vector<size_t> read_;
  std::vector<std::vector<std::string>> log_;
  std::map<int, std::string> printed_;
  std::vector<int> exit_;
  long long done_ = 0;
};

TEST(RootCauseTest, AnEchoDoesNotStopTheWorkersButWaitsForACause) {
  Job job(1, 3);
  EXPECT_THAT(job.exits(1, kPeerLost), ElementsAre("publish failure of rank 1", "wake at 5000 ms"));
  EXPECT_EQ(job.agent(0).phase(), Supervisor::Phase::kRunning);
  job.deliverAll();
  EXPECT_EQ(job.agent(0).phase(), Supervisor::Phase::kRunning) << "rank 0 may still report";
}

TEST(RootCauseTest, ACauseAfterItsEchoesIsTheRootCause) {
  Job job(1, 3);
  job.exits(1, kPeerLost);
  job.exits(2, 1, 0,
            {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] "
             "Connection closed by peer [127.0.0.1]:28048"});
  job.deliverAll();  // both echoes are read before the cause is published
  EXPECT_THAT(job.exits(0, kIo),
              ElementsAre("signal 15", "wake at 25000 ms", "publish failure of rank 0"));
  job.deliverAll();
  EXPECT_EQ(job.exitCode(0), kIo);
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 0 (local rank 0) on node 0 (node0), "
                                        "pid 1000, exit code 74"));
  EXPECT_THAT(job.printed(0), HasSubstr("distrun: ranks 1, 2 failed before it only because they "
                                        "lost a peer: not the cause\n"));
}

TEST(RootCauseTest, EchoesAfterTheCauseAreNotPublished) {
  Job job(1, 3);
  job.exits(0, 0, SIGSEGV);
  EXPECT_THAT(job.exits(1, kPeerLost), IsEmpty()) << "stopping: not published";
  job.exits(2, 0, SIGTERM);
  job.deliverAll();
  EXPECT_EQ(job.exitCode(0), 128 + SIGSEGV);
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 0"));
  EXPECT_THAT(job.printed(0), Not(HasSubstr("lost a peer")));
}

TEST(RootCauseTest, ACausePublishedBeforeAnEchoOfAnotherNodeIsTheRootCause) {
  Job job(2, 1);
  job.exits(1, 1, 0, {"Traceback (most recent call last):", "ValueError: bad batch"});
  job.exits(0, kPeerLost);  // node 0 had not read the cause yet
  job.deliverAll();
  job.deliverAll();  // "complete": no exception of the cause's own, so every node waits for it
  for (int node : {0, 1}) EXPECT_EQ(job.exitCode(node), 1) << node;
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 1 (local rank 0) on node 1"));
  EXPECT_THAT(job.printed(0), Not(HasSubstr("lost a peer")));
}

TEST(RootCauseTest, WithEchoesOnlyTheWorkersAreStoppedAfterTheWaitAndTheFirstEchoIsReported) {
  Job job(1, 2);
  job.exits(1, kPeerLost);
  job.deliverAll();
  job.advance(4999ms);
  EXPECT_THAT(job.deadline(0), IsEmpty());
  job.advance(1ms);
  EXPECT_THAT(job.deadline(0), ElementsAre("print distrun: node 0: a rank lost its peer and no "
                                           "rank reported an error of its own within 5 s: "
                                           "stopping the workers\n",
                                           "signal 15", "wake at 30000 ms"));
  EXPECT_THAT(job.exits(0, 0, SIGTERM),
              ElementsAre("mark node done", "publish complete", "wake at 40000 ms"));
  job.deliverAll();
  EXPECT_EQ(job.exitCode(0), kPeerLost);
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 1 (local rank 1)"));
  EXPECT_THAT(job.printed(0), HasSubstr("distrun: rank 1 only lost a peer, and no rank reported "
                                        "an error of its own"));
}

// Rank 0 of a one-node job lost rank 1, which has not exited yet: the cause
// wait passes and the workers are sent SIGTERM.
void stopAfterRankZerosEcho(Job& job) {
  job.exits(0, kPeerLost);
  job.deliverAll();
  job.advance(5s);
  EXPECT_THAT(job.deadline(0), Contains("signal 15"));
}

// Rank 1 was SIGKILLed from outside, but its teardown (a starved
// SCHED_IDLE thread) outlasts the cause wait: its exit, reaped after the
// workers were stopped, is still the cause the echo waited for.
TEST(RootCauseTest, ASigkillReapedAfterTheCauseWaitIsStillTheRootCause) {
  Job job(1, 2);
  stopAfterRankZerosEcho(job);
  EXPECT_THAT(job.exits(1, 0, SIGKILL), ElementsAre(StartsWith("publish failure")));
  job.deliverAll();
  EXPECT_EQ(job.exitCode(0), 128 + SIGKILL);
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 1 (local rank 1)"));
  EXPECT_THAT(job.printed(0), HasSubstr("distrun: rank 0 failed before it only because it lost "
                                        "a peer: not the cause\n"));
}

// A SIGKILL the agent sent itself (--term-timeout passed) is its own doing:
// the echo stays the root cause.
TEST(RootCauseTest, TheAgentsOwnSigkillIsNoCause) {
  Job job(1, 2);
  stopAfterRankZerosEcho(job);
  job.advance(25s);  // --term-timeout
  EXPECT_THAT(job.deadline(0), Contains("kill"));
  EXPECT_THAT(job.exits(1, 0, SIGKILL), Not(Contains(StartsWith("publish failure"))));
  job.deliverAll();
  EXPECT_EQ(job.exitCode(0), kPeerLost);
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 0 (local rank 0)"));
}

TEST(RootCauseTest, AmongTwoCausesAfterAnEchoTheFirstPublishedWins) {
  Job job(2, 2);
  job.exits(0, kPeerLost);
  job.exits(3, 5);  // node 1
  job.exits(1, 4);  // node 0, published after node 1's
  job.deliverAll();
  job.exits(2, 0, SIGTERM);
  job.deliverAll();  // "complete"
  for (int node : {0, 1}) EXPECT_EQ(job.exitCode(node), 5) << node;
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 3 (local rank 1) on node 1"));
  EXPECT_THAT(job.printed(0), HasSubstr("distrun: rank 0 failed before it only because it lost "
                                        "a peer: not the cause\n"));
}

TEST(RootCauseTest, ACauseOnAnotherNodePublishedAfterTheEchoesNamesThatNodeEverywhere) {
  Job job(2, 2);
  // Node 0's workers lose rank 2 (node 1), which is still writing its error.
  job.exits(0, kPeerLost);
  job.exits(1, 1, 0, {"lost rank 2 (host node1, pid 1002): Connection reset by peer"});
  job.deliverAll();
  EXPECT_THAT(job.log(1), testing::Contains("wake at 5000 ms")) << "node 1 waits for a cause";
  EXPECT_EQ(job.agent(1).phase(), Supervisor::Phase::kRunning);
  job.advance(300ms);
  job.exits(2, kIo);
  job.deliverAll();
  job.exits(3, 0, SIGTERM);
  job.deliverAll();  // "complete"
  for (int node : {0, 1}) EXPECT_EQ(job.exitCode(node), kIo) << node;
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 2 (local rank 0) on node 1"));
  EXPECT_THAT(job.printed(1), HasSubstr("stopped: rank 2 on node 1 failed"));
}

TEST(RootCauseTest, EchoesOnEveryNodeSettleOnTheFirstOnceEveryNodeIsDone) {
  Job job(2, 1);
  job.exits(1, kPeerLost);  // node 1 first
  job.exits(0, kPeerLost);
  job.deliverAll();
  job.deliverAll();  // "complete", published by the last node done
  for (int node : {0, 1}) EXPECT_EQ(job.exitCode(node), kPeerLost) << node;
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 1 (local rank 0) on node 1"));
}

TEST(RootCauseTest, ANodeThatNeverCountsItselfDoneIsWaitedForBoundedly) {
  Job job(2, 1);
  job.exits(0, kPeerLost);  // node 1's agent is gone: it never reads or publishes
  job.deliver(0);
  EXPECT_EQ(job.exitCode(0), -1);
  job.advance(34999ms);
  EXPECT_THAT(job.deadline(0), IsEmpty());
  job.advance(1ms);
  EXPECT_THAT(job.deadline(0), ElementsAre("publish complete"));
  job.deliver(0);
  EXPECT_EQ(job.exitCode(0), kPeerLost);
}

TEST(RootCauseTest, ACausePublishedAfterTheSettlingCompleteChangesNothing) {
  Job job(2, 1);
  job.exits(0, kPeerLost);
  job.advance(35s);
  EXPECT_THAT(job.deadline(0), ElementsAre("publish complete"));
  job.exits(1, kIo);  // too late: after "complete" in the store's order
  job.deliverAll();
  for (int node : {0, 1}) EXPECT_EQ(job.exitCode(node), kPeerLost) << node;
}

TEST(RootCauseTest, ASignalWhileWaitingForACauseEndsTheJobWithTheSignal) {
  Job job(1, 2);
  job.exits(1, kPeerLost);
  job.deliverAll();
  job.agent(0).signalReceived(SIGTERM, job.now());
  EXPECT_EQ(job.agent(0).phase(), Supervisor::Phase::kStopping);
  job.advance(5s);
  EXPECT_THAT(job.deadline(0), IsEmpty()) << "the grace of the signal runs";
  job.advance(20s);
  EXPECT_THAT(job.deadline(0), testing::Contains("kill"));
}

TEST(RootCauseTest, ARestartNamesTheCauseNotItsEcho) {
  Job job(1, 2, 1);
  job.exits(1, kPeerLost);
  job.exits(0, 0, SIGKILL);
  auto restart = job.deliver(0);
  EXPECT_THAT(restart, testing::Contains("print distrun: node 0: rank 0 failed (signal 9); "
                                         "restarting all workers (restart 1 of 1)\n"));
}

// Rank 1 (node 1) raises under @record, its exit handlers take a second;
// meanwhile rank 0 (node 0) fails in its collective with a message of its
// own and is published first. Node 1's agent, told to stop its worker,
// reaps rank 1 with its exception, written before rank 0 was reaped, and
// publishes it: both nodes report rank 1 in its own words, rank 0 as not
// the cause.
constexpr long long kReapedAt = 1764640000500;  // rank 0's exit, ms since the epoch

WorkerFailure rankOneRaised(long long writtenMs) {
  WorkerFailure f = exitOf(1, 0, 0, SIGTERM, 1);
  f.errorMessage = "ValueError: bad batch";
  f.errorTimestamp = writtenMs / 1000;
  f.errorWrittenMs = writtenMs;
  return f;
}

WorkerFailure rankZeroFailedOnItsOwnWords() {
  WorkerFailure f = exitOf(0, 0, 2, 0, 0, {"RuntimeError: the all_reduce failed"});
  f.exitedMs = kReapedAt;
  return f;
}

TEST(RootCauseTest, AnExceptionRaisedOnAnotherNodeBeforeTheCauseFailedIsTheRootCause) {
  Job job(2, 1);
  job.exits(rankZeroFailedOnItsOwnWords());
  job.deliverAll();
  EXPECT_EQ(job.agent(0).phase(), Supervisor::Phase::kStopping) << "waits for the other node";
  EXPECT_THAT(job.exits(rankOneRaised(kReapedAt - 40)),
              ElementsAre("publish failure of rank 1", "mark node done", "publish complete"));
  job.deliverAll();
  for (int node : {0, 1}) EXPECT_EQ(job.exitCode(node), 143) << node;
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 1 (local rank 0) on node 1"));
  EXPECT_THAT(job.printed(0), HasSubstr("ValueError: bad batch"));
  EXPECT_THAT(job.printed(0), HasSubstr("distrun: rank 0 failed before it only because it lost "
                                        "a peer: not the cause\n"));
}

TEST(RootCauseTest, AnExceptionRaisedAfterTheCauseFailedIsNotTheRootCause) {
  Job job(2, 1);
  job.exits(rankZeroFailedOnItsOwnWords());
  job.deliverAll();
  EXPECT_THAT(job.exits(rankOneRaised(kReapedAt + 40)),
              ElementsAre("mark node done", "publish complete"))
      << "raised once rank 0 had failed: not published";
  job.deliverAll();
  for (int node : {0, 1}) EXPECT_EQ(job.exitCode(node), 2) << node;
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 0 (local rank 0) on node 0"));
}

// A node that is never done (its agent died with its host) holds the
// others 10 s + --term-timeout at the most.
TEST(RootCauseTest, TheWaitForAnotherNodesExceptionIsBounded) {
  Job job(2, 1);
  job.exits(rankZeroFailedOnItsOwnWords());
  job.deliverAll();
  job.advance(34999ms);
  job.deadline(0);
  EXPECT_EQ(job.exitCode(0), -1);
  job.advance(1ms);
  job.deadline(0);
  EXPECT_EQ(job.exitCode(0), 2);
  EXPECT_THAT(job.printed(0), HasSubstr("root cause was rank 0 (local rank 0) on node 0"));
}

}  // namespace
}  // namespace distrun::launch
