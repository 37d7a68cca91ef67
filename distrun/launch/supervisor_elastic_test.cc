// Lost nodes and elastic re-forming: one node's Supervisor fed the events
// its agent would hand it.
#include <csignal>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/launch/supervisor.h"
#include "distrun/launch/supervisor_testing.h"

namespace distrun::launch {
namespace {

using supervisor_testing::names;
using supervisor_testing::printed;

using namespace std::chrono_literals;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using Kind = JobEvent::Kind;
using Phase = Supervisor::Phase;

std::string errorOf(const Actions& actions) {
  for (const Action& a : actions) {
    if (const auto* e = std::get_if<EndWithError>(&a)) return e->message;
  }
  return "";
}

// The StartWorkers in `actions` (which must outlive the pointer), or null.
const StartWorkers* startOf(const Actions& actions) {
  for (const Action& a : actions) {
    if (const auto* s = std::get_if<StartWorkers>(&a)) return s;
  }
  return nullptr;
}

// One worker a node; `elastic`: --nnodes 2:3, else 3 fixed nodes.
AgentConfig nodeConfig(bool elastic, int maxRestarts) {
  AgentConfig c;
  c.layout.localWorldSize = 1;
  c.layout.numNodes = 3;
  c.layout.nodeRank = 1;
  c.maxRestarts = maxRestarts;
  c.termTimeout = 25s;
  c.runId = "job";
  if (elastic) c.elastic = ElasticSpec{2, 3, 5s, "10.0.0.2", std::nullopt};
  return c;
}

// The exit record of node `node`'s only worker (its rank is the node's).
WorkerFailure exitOfNode(int node, int code, int signal = 0) {
  return supervisor_testing::exitOf(node, 0, code, signal, node);
}

class ElasticSupervisorTest : public ::testing::Test {
 protected:
  TimePoint now() const { return clock_.now(); }

  // Joins round `round` as node `nodeRank` of `nodes` and starts its worker.
  Actions startRound(Supervisor& s, int round, int nodeRank, int nodes) {
    rdzv::World world{round, nodes, nodes, nodeRank, "head", 29500, nodeRank};
    Actions out = s.rendezvousCompleted(world, now());
    EXPECT_THAT(s.workerStarted(0, 1000 + nodeRank, now()), IsEmpty());
    return out;
  }
  // Stops the worker as the Supervisor asked: it exits by SIGTERM.
  Actions workerStopped(Supervisor& s, int rank) {
    return s.workerExited(exitOfNode(rank, 0, SIGTERM), now());
  }

  FakeClock clock_;
};

TEST_F(ElasticSupervisorTest, ALostNodeReformsTheJobOnTheNodesLeftAndCountsARestart) {
  Supervisor s(nodeConfig(true, 2), 29400);
  s.start(now());
  EXPECT_EQ(startOf(startRound(s, 0, 1, 3))->world.restarts, 0);
  Actions lost = s.storeEvent(JobEvent{Kind::kNodeLost, "10.0.0.3"}, now());
  EXPECT_THAT(names(lost), Contains("signal 15"));
  EXPECT_THAT(printed(lost), HasSubstr("node 1: node 10.0.0.3 was lost"));
  Actions ended = workerStopped(s, 1);
  EXPECT_THAT(names(ended), Contains("join round 1"));
  EXPECT_THAT(printed(ended),
              HasSubstr("node 10.0.0.3 was lost; re-forming the job (restart 1 of 2)"));
  // The survivors' round: this node is node 0 of 2 now.
  const Actions restarted = startRound(s, 1, 0, 2);
  const StartWorkers* start = startOf(restarted);
  ASSERT_NE(start, nullptr);
  EXPECT_EQ(start->world.restarts, 1);
  EXPECT_EQ(start->world.worldSize, 2);
  EXPECT_EQ(s.config().layout.nodeRank, 0);
  EXPECT_EQ(s.config().layout.numNodes, 2);
}

TEST_F(ElasticSupervisorTest, AWaitingNodeReformsTheJobWithoutCountingARestart) {
  Supervisor s(nodeConfig(true, 0), 29400);
  s.start(now());
  startRound(s, 0, 1, 2);
  Actions waiting = s.storeEvent(JobEvent{Kind::kNodeWaiting, "10.0.0.4"}, now());
  EXPECT_THAT(printed(waiting), HasSubstr("node 10.0.0.4 waits to join"));
  Actions ended = workerStopped(s, 1);
  EXPECT_THAT(names(ended), Contains("join round 1"));
  EXPECT_THAT(printed(ended), HasSubstr("(restart 0 of 0)"));
  EXPECT_EQ(startOf(startRound(s, 1, 1, 3))->world.restarts, 0);
  EXPECT_EQ(s.restarts(), 0);
}

TEST_F(ElasticSupervisorTest, AWaitingNodeChangesNothingWhenTheRoundIsFull) {
  Supervisor s(nodeConfig(true, 0), 29400);
  s.start(now());
  startRound(s, 0, 1, 3);
  EXPECT_THAT(s.storeEvent(JobEvent{Kind::kNodeWaiting, "10.0.0.4"}, now()), IsEmpty());
  EXPECT_EQ(s.phase(), Phase::kRunning);
}

TEST_F(ElasticSupervisorTest, AFailureIsRecordedAgainstItsNodeAndReformsTheJob) {
  Supervisor s(nodeConfig(true, 1), 29400);
  s.start(now());
  startRound(s, 0, 1, 3);
  Actions failed = s.workerExited(exitOfNode(1, 3), now());
  EXPECT_THAT(names(failed), Contains("record node failure"));
  s.storeEvent(JobEvent{Kind::kFailure, exitOfNode(1, 3).toJson()}, now());
  EXPECT_EQ(s.phase(), Phase::kStopping) << "until every node is done: a correction may come";
  s.storeEvent(JobEvent{Kind::kComplete, ""}, now());
  EXPECT_EQ(s.phase(), Phase::kJoining);
  EXPECT_EQ(s.restarts(), 1);
}

TEST_F(ElasticSupervisorTest, ALostStoreIsReplacedBeforeTheNextRound) {
  Supervisor s(nodeConfig(true, 1), 29400);
  s.start(now());
  startRound(s, 0, 1, 3);
  s.storeLost("connection reset", now());
  Actions ended = workerStopped(s, 1);
  EXPECT_THAT(names(ended), Contains("find store"));
  EXPECT_THAT(names(ended), Not(Contains("join round 1")));
  EXPECT_EQ(s.phase(), Phase::kFindingStore);
  Actions found = s.storeFound("10.0.0.2:41000", now());
  EXPECT_THAT(printed(found), HasSubstr("the rendezvous store is now at 10.0.0.2:41000"));
  EXPECT_THAT(names(found), Contains("join round 1"));
}

TEST_F(ElasticSupervisorTest, AStoreLostWhileALaterRoundFormsIsReplacedWithoutARestart) {
  Supervisor s(nodeConfig(true, 1), 29400);
  s.start(now());
  startRound(s, 0, 1, 3);
  s.storeEvent(JobEvent{Kind::kNodeLost, "10.0.0.3"}, now());
  workerStopped(s, 1);
  ASSERT_EQ(s.phase(), Phase::kJoining);
  Actions lost = s.storeLostWhileJoining("lost the rendezvous store at head:29400", true, now());
  EXPECT_THAT(printed(lost), HasSubstr("the rendezvous store was lost while round 1 formed"));
  EXPECT_THAT(names(lost), ElementsAre(::testing::StartsWith("print "), "find store"));
  EXPECT_EQ(s.phase(), Phase::kFindingStore);
  EXPECT_THAT(names(s.storeFound("10.0.0.2:41000", now())), Contains("join round 2"));
  EXPECT_EQ(s.restarts(), 1) << "the lost node's restart only";
}

TEST_F(ElasticSupervisorTest, AStoreLostInTheFirstRoundEndsTheJob) {
  Supervisor s(nodeConfig(true, 1), 29400);
  s.start(now());
  Actions lost = s.storeLostWhileJoining("lost the rendezvous store at head:29400", false, now());
  EXPECT_THAT(errorOf(lost), HasSubstr("lost the rendezvous store at head:29400"));
  EXPECT_EQ(s.phase(), Phase::kEnded);
}

TEST_F(ElasticSupervisorTest, NoRestartLeftEndsTheJobNamingTheLostNode) {
  Supervisor s(nodeConfig(true, 0), 29400);
  s.start(now());
  startRound(s, 0, 1, 3);
  s.storeEvent(JobEvent{Kind::kNodeLost, "10.0.0.3"}, now());
  Actions ended = workerStopped(s, 1);
  EXPECT_THAT(errorOf(ended), HasSubstr("node 10.0.0.3 was lost"));
  EXPECT_THAT(errorOf(ended), HasSubstr("no restart is left (--max-restarts 0)"));
  EXPECT_EQ(s.phase(), Phase::kEnded);
}

TEST_F(ElasticSupervisorTest, AFixedJobEndsAtOnceWhenANodeIsLost) {
  Supervisor s(nodeConfig(false, 3), 29400);
  s.start(now());
  startRound(s, 0, 1, 3);
  s.storeEvent(JobEvent{Kind::kNodeLost, "10.0.0.3"}, now());
  Actions ended = workerStopped(s, 1);
  EXPECT_THAT(errorOf(ended), HasSubstr("a job of fixed nodes cannot go on without it"));
  EXPECT_THAT(names(ended), Contains("leave job"));
}

TEST_F(ElasticSupervisorTest, ALostNodeOutranksTheEchoesItCauses) {
  Supervisor s(nodeConfig(true, 0), 29400);
  s.start(now());
  startRound(s, 0, 1, 3);
  s.storeEvent(JobEvent{Kind::kNodeLost, "10.0.0.3"}, now());
  WorkerFailure echo = exitOfNode(1, 69);  // it lost its peer
  echo.stderrTail = {"Connection reset by peer"};
  s.storeEvent(JobEvent{Kind::kFailure, echo.toJson()}, now());
  Actions ended = workerStopped(s, 1);
  EXPECT_THAT(errorOf(ended), HasSubstr("node 10.0.0.3 was lost"));
}

TEST_F(ElasticSupervisorTest, ARoundWithoutMinNodesEndsNamingTheNodesLost) {
  Supervisor s(nodeConfig(true, 3), 29400);
  s.start(now());
  startRound(s, 0, 1, 2);
  s.storeEvent(JobEvent{Kind::kNodeLost, "10.0.0.3"}, now());
  workerStopped(s, 1);
  Actions failed = s.rendezvousFailed("round 1: 1 of the 2 nodes needed joined within 30 s", now());
  EXPECT_THAT(errorOf(failed), HasSubstr("1 of the 2 nodes needed"));
  EXPECT_THAT(errorOf(failed), HasSubstr("nodes lost during the job: 10.0.0.3"));
  EXPECT_EQ(s.phase(), Phase::kEnded);
}

TEST_F(ElasticSupervisorTest, ARoundThatLeavesANodeOutSaysSo) {
  Supervisor s(nodeConfig(true, 3), 29400);
  s.start(now());
  rdzv::World world{0, 2, 2, 1, "head", 29500, 1};
  Actions started = s.rendezvousCompleted(world, now(), {"10.0.0.4"});
  EXPECT_THAT(printed(started),
              HasSubstr("round 0 leaves out node(s) 10.0.0.4: their workers failed in two "
                        "consecutive rounds"));
  EXPECT_THAT(names(started), Contains("start round 0"));
}

TEST_F(ElasticSupervisorTest, ASignalStillEndsAnElasticJob) {
  Supervisor s(nodeConfig(true, 3), 29400);
  s.start(now());
  startRound(s, 0, 1, 3);
  s.signalReceived(SIGTERM, now());
  Actions ended = workerStopped(s, 1);
  EXPECT_THAT(names(ended), Contains("exit 143"));
}

}  // namespace
}  // namespace distrun::launch
