// RootCause alone: the ranking every node applies to the failures it reads
// in the store's order (the Supervisors of a whole job: supervisor_cause_test).
#include "distrun/launch/root_cause.h"

#include <gtest/gtest.h>

#include "distrun/common/exit_code.h"
#include "distrun/launch/supervisor_testing.h"

namespace distrun::launch {
namespace {

using supervisor_testing::exitOf;
using Taken = RootCause::Taken;

WorkerFailure cause(int rank) { return exitOf(rank, rank, 3); }
WorkerFailure echo(int rank) { return exitOf(rank, rank, toInt(ExitCode::kPeerLost)); }
// A cause whose exception PyTorch's @record wrote at `writtenMs`.
WorkerFailure raisedAt(int rank, long long writtenMs) {
  WorkerFailure f = cause(rank);
  f.errorMessage = "RuntimeError: boom";
  f.errorWrittenMs = writtenMs;
  f.exitedMs = writtenMs + 1000;
  return f;
}

TEST(RootCauseRankingTest, TheFirstCauseInTheStoresOrderWins) {
  RootCause r;
  EXPECT_EQ(r.takeCause(cause(2)), Taken::kFirst);
  EXPECT_EQ(r.takeCause(cause(1)), Taken::kIgnored);
  ASSERT_TRUE(r.cause());
  EXPECT_EQ(r.cause()->rank, 2);
  EXPECT_TRUE(r.decided());
}

TEST(RootCauseRankingTest, ACauseOutranksEveryEchoBeforeIt) {
  RootCause r;
  EXPECT_TRUE(r.takeEcho(echo(0)));
  EXPECT_TRUE(r.echoAwaitsCause());
  EXPECT_FALSE(r.decided());
  EXPECT_EQ(r.takeCause(cause(3)), Taken::kFirst);
  EXPECT_EQ(r.cause()->rank, 3);
  EXPECT_FALSE(r.echoAwaitsCause());
  EXPECT_FALSE(r.takeEcho(echo(1)));  // after a cause: not even counted
  EXPECT_EQ(r.echoNote(*r.cause()),
            "distrun: rank 0 failed before it only because it lost a peer: not the cause\n");
}

TEST(RootCauseRankingTest, AnEarlierExceptionCorrectsTheCause) {
  RootCause r;
  WorkerFailure reaped = exitOf(0, 0, 1);  // no exception of its own
  reaped.exitedMs = 10000;
  EXPECT_EQ(r.takeCause(reaped), Taken::kFirst);
  EXPECT_TRUE(r.correctable(2));
  EXPECT_FALSE(r.correctable(1));  // one node: no other node's exception can come
  EXPECT_TRUE(r.correctedBy(raisedAt(1, 5000)));
  EXPECT_EQ(r.takeCause(raisedAt(1, 5000)), Taken::kCorrected);
  EXPECT_EQ(r.cause()->rank, 1);
  EXPECT_FALSE(r.correctable(2));  // it raised: final
  EXPECT_FALSE(r.correctedBy(raisedAt(2, 6000)));
  EXPECT_EQ(r.takeCause(raisedAt(2, 6000)), Taken::kIgnored);
  EXPECT_TRUE(r.correctedBy(raisedAt(2, 4000)));
  EXPECT_EQ(r.takeCause(raisedAt(2, 4000)), Taken::kCorrected);
  EXPECT_EQ(r.echoNote(*r.cause()),
            "distrun: ranks 0, 1 failed before it only because they lost a peer: not the cause\n");
}

TEST(RootCauseRankingTest, ALostNodeBeforeAnyCauseDecidesAndStays) {
  RootCause r;
  EXPECT_TRUE(r.takeEcho(echo(0)));
  EXPECT_TRUE(r.takeLostNode("node1"));
  EXPECT_TRUE(r.decided());
  EXPECT_FALSE(r.echoAwaitsCause());
  EXPECT_EQ(r.takeCause(raisedAt(2, 1)), Taken::kIgnored);
  EXPECT_FALSE(r.cause());
  EXPECT_FALSE(r.takeLostNode("node2"));
  EXPECT_EQ(r.lostNode(), "node1");
  EXPECT_FALSE(r.settleOnEcho());
}

TEST(RootCauseRankingTest, ALostNodeAfterACauseChangesNothing) {
  RootCause r;
  r.takeCause(cause(1));
  EXPECT_FALSE(r.takeLostNode("node1"));
  EXPECT_FALSE(r.lostNode());
}

TEST(RootCauseRankingTest, WithoutACauseTheFirstEchoSettles) {
  RootCause r;
  EXPECT_FALSE(r.settleOnEcho());  // nothing to settle on
  r.takeEcho(echo(3));
  r.takeEcho(echo(1));
  EXPECT_TRUE(r.settleOnEcho());
  ASSERT_TRUE(r.cause());
  EXPECT_EQ(r.cause()->rank, 3);
  EXPECT_EQ(r.echoNote(*r.cause()),
            "distrun: rank 3 only lost a peer, and no rank reported an error of its own: the "
            "rank it lost was probably killed from outside or lost its host\n");
}

TEST(RootCauseRankingTest, WhatThisNodePublishedDecidesWhetherAnEchoWaits) {
  RootCause echoedHere;
  echoedHere.publishedHere(true);
  EXPECT_TRUE(echoedHere.echoAwaitsCause());  // before it comes back from the store

  RootCause causedHere;
  causedHere.publishedHere(true);
  causedHere.publishedHere(false);
  EXPECT_FALSE(causedHere.echoAwaitsCause());  // its cause is on its way through the store
  EXPECT_FALSE(causedHere.decided());          // but only the store's order decides
}

TEST(RootCauseRankingTest, NoEchoNoteForACauseAlone) {
  RootCause r;
  r.takeCause(cause(0));
  EXPECT_EQ(r.echoNote(*r.cause()), "");
}

}  // namespace
}  // namespace distrun::launch
