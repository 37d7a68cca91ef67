// RestartPolicy alone: what follows a round, for a fixed and an elastic job
// (the Supervisor carrying it out: supervisor_test, supervisor_elastic_test).
#include "distrun/launch/restart_policy.h"

#include <gtest/gtest.h>

#include "distrun/launch/supervisor_testing.h"

namespace distrun::launch {
namespace {

using supervisor_testing::exitOf;
using NextKind = NextRound::Kind;

RootCause failedRank(int rank) {
  RootCause r;
  r.takeCause(exitOf(rank, rank, 3));
  return r;
}

// How a round ended: its cause as the ranking left it, then what `set`
// adds (a signal, success, the store lost, a node waiting to join).
RoundEnd endOf(
    const RootCause& cause, void (*set)(RoundEnd&) = [](RoundEnd&) {}) {
  RoundEnd end(cause);
  set(end);
  return end;
}

RootCause lostNode(const std::string& node) {
  RootCause r;
  r.takeLostNode(node);
  return r;
}

TEST(RestartPolicyTest, AFixedJobRestartsAfterAFailureWhileRestartsAreLeft) {
  RestartPolicy p(2, std::nullopt);
  RootCause failed = failedRank(1);
  for (int restart = 1; restart <= 2; ++restart) {
    NextRound next = p.after(endOf(failed));
    EXPECT_EQ(next.kind, NextKind::kRestart);
    EXPECT_EQ(next.why, "rank 1 failed (exit code 3)");
    EXPECT_TRUE(next.countsRestart);
    EXPECT_FALSE(next.storeFirst);
    EXPECT_EQ(p.restarts(), restart);
  }
  EXPECT_EQ(p.after(endOf(failed)).kind, NextKind::kEndJob);
  EXPECT_EQ(p.restarts(), 2);
}

TEST(RestartPolicyTest, AFixedJobEndsOnEverythingButAFailure) {
  RestartPolicy p(3, std::nullopt);
  RootCause none;
  EXPECT_EQ(p.after(endOf(none, [](RoundEnd& e) { e.complete = true; })).kind,
            NextKind::kEndJob);  // success
  EXPECT_EQ(p.after(endOf(none, [](RoundEnd& e) { e.signal = 15; })).kind,
            NextKind::kEndJob);  // a signal
  EXPECT_EQ(p.after(endOf(none, [](RoundEnd& e) { e.storeLost = true; })).kind,
            NextKind::kEndJob);                                          // the store lost
  EXPECT_EQ(p.after(endOf(lostNode("node1"))).kind, NextKind::kEndJob);  // a node lost
  EXPECT_EQ(p.after(endOf(none, [](RoundEnd& e) { e.waitingNode = "node2"; })).kind,
            NextKind::kEndJob);
  EXPECT_EQ(p.restarts(), 0);
  EXPECT_FALSE(p.reformsForWaitingNode(1));
}

TEST(RestartPolicyTest, AnElasticJobReformsAfterAFailureALostNodeOrALostStore) {
  RestartPolicy p(3, 4);
  NextRound failure = p.after(endOf(failedRank(2)));
  EXPECT_EQ(failure.kind, NextKind::kReform);
  EXPECT_EQ(failure.why, "rank 2 failed (exit code 3)");
  NextRound lost = p.after(endOf(lostNode("node1")));
  EXPECT_EQ(lost.kind, NextKind::kReform);
  EXPECT_EQ(lost.why, "node node1 was lost");
  EXPECT_FALSE(lost.storeFirst);
  RootCause none;
  NextRound store = p.after(endOf(none, [](RoundEnd& e) { e.storeLost = true; }));
  EXPECT_EQ(store.kind, NextKind::kReform);
  EXPECT_EQ(store.why, "the rendezvous store was lost");
  EXPECT_TRUE(store.storeFirst);
  EXPECT_EQ(p.restarts(), 3);
  EXPECT_EQ(p.after(endOf(failedRank(2))).kind, NextKind::kEndJob);  // none left
}

TEST(RestartPolicyTest, AFailureAndALostStoreReformOnTheStoresSuccessor) {
  RestartPolicy p(1, 2);
  NextRound next = p.after(endOf(failedRank(0), [](RoundEnd& e) { e.storeLost = true; }));
  EXPECT_EQ(next.why, "rank 0 failed (exit code 3)");
  EXPECT_TRUE(next.storeFirst);
}

TEST(RestartPolicyTest, AnElasticJobEndsOnASignalOrSuccess) {
  RestartPolicy p(5, 4);
  EXPECT_EQ(p.after(endOf(failedRank(1), [](RoundEnd& e) { e.signal = 15; })).kind,
            NextKind::kEndJob);  // the signal first
  RootCause none;
  EXPECT_EQ(p.after(endOf(none,
                          [](RoundEnd& e) {
                            e.complete = true;
                            e.waitingNode = "node3";
                          }))
                .kind,
            NextKind::kEndJob);
  EXPECT_EQ(p.restarts(), 0);
}

TEST(RestartPolicyTest, AWaitingNodeReformsWithoutCountingARestart) {
  RestartPolicy p(0, 3);
  RootCause none;
  NextRound next = p.after(endOf(none, [](RoundEnd& e) { e.waitingNode = "node9"; }));
  EXPECT_EQ(next.kind, NextKind::kReform);
  EXPECT_EQ(next.why, "node node9 waits to join");
  EXPECT_FALSE(next.countsRestart);
  EXPECT_EQ(p.restarts(), 0);
  EXPECT_TRUE(p.reformsForWaitingNode(2));
  EXPECT_FALSE(p.reformsForWaitingNode(3));  // full: it waits
}

}  // namespace
}  // namespace distrun::launch
