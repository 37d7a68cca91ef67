// The elastic rendezvous' pure rules: exclusion, the closer's plan, and the
// values agents exchange through the store.
#include "distrun/rdzv/elastic_plan.h"

#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::rdzv {
namespace {

using detail::FailureTable;
using detail::NodeRecord;
using detail::RoundPlan;

TEST(ExcludedUntil, TwoConsecutiveFailuresExcludeTheNextRound) {
  EXPECT_EQ(excludedUntil({3, 4}, 5), 6);
  EXPECT_EQ(excludedUntil({3, 4}, 6), std::nullopt);
  EXPECT_EQ(excludedUntil({3, 4}, 4), std::nullopt);  // the pair is not complete before 5
}

TEST(ExcludedUntil, FailuresThatAreNotConsecutiveExcludeNothing) {
  EXPECT_EQ(excludedUntil({3}, 4), std::nullopt);
  EXPECT_EQ(excludedUntil({3, 5}, 6), std::nullopt);
  EXPECT_EQ(excludedUntil({}, 0), std::nullopt);
}

TEST(ExcludedUntil, EachFurtherPairDoublesTheExclusion) {
  // Pairs (0,1): out of 2; (3,4): out of 5 and 6; (7,8): out of 9..12.
  const std::vector<int> failed = {0, 1, 3, 4, 7, 8};
  EXPECT_EQ(excludedUntil(failed, 2), 3);
  EXPECT_EQ(excludedUntil(failed, 5), 7);
  EXPECT_EQ(excludedUntil(failed, 6), 7);
  EXPECT_EQ(excludedUntil(failed, 9), 13);
  EXPECT_EQ(excludedUntil(failed, 12), 13);
  EXPECT_EQ(excludedUntil(failed, 13), std::nullopt);
}

TEST(ExcludedUntil, PairsDoNotOverlapAndOrderAndRepeatsDoNotMatter) {
  // 3,4,5: one pair (3,4) and a single 5; (5,6) would need 6.
  EXPECT_EQ(excludedUntil({5, 4, 3, 4}, 6), std::nullopt);
  EXPECT_EQ(excludedUntil({4, 3, 3}, 5), 6);
}

NodeRecord node(const std::string& name, int nproc = 1, int preferred = -1,
                const std::string& scope = "") {
  const int standbyPort = 7000 + static_cast<int>(name.size());
  return NodeRecord{nproc, preferred, scope, standbyPort, name + ".host", name};
}

// `name`, which last trained in round `round` of `nodes` (its node 0 when
// `zero`), knowing `gone` gone for sure.
NodeRecord trainedIn(const std::string& name, int round, int nodes, bool zero = false,
                     std::vector<std::string> gone = {}) {
  NodeRecord r = node(name);
  r.trained = TrainedRound{round, nodes, zero, std::move(gone)};
  return r;
}

TEST(Fencing, AFirstRoundAndAMajorityOfTheLastRoundForm) {
  EXPECT_EQ(detail::fencedBy({node("a")}, 0), std::nullopt);
  EXPECT_EQ(detail::fencedBy({trainedIn("b", 0, 3), trainedIn("c", 0, 3)}, 1), std::nullopt);
  // A newcomer does not count; the old members are enough.
  EXPECT_EQ(detail::fencedBy({trainedIn("a", 4, 2), trainedIn("b", 4, 2), node("new")}, 5),
            std::nullopt);
}

TEST(Fencing, AMinorityOfTheLastRoundIsFencedInOneLine) {
  EXPECT_EQ(detail::fencedBy({trainedIn("c", 0, 3), node("new")}, 1),
            "round 1 is fenced: 1 of the 3 nodes of round 0 (c) reach this rendezvous store, 0 "
            "of the others are gone for sure; the rest may be training beyond a network "
            "partition, so this side stops (a round goes on with more than half of the last "
            "round's nodes not known gone, or half of them with its node rank 0)");
}

TEST(Fencing, HalfFormsOnlyWithTheLastRoundsNodeZero) {
  EXPECT_EQ(detail::fencedBy({trainedIn("a", 2, 2, true)}, 3), std::nullopt);
  EXPECT_NE(detail::fencedBy({trainedIn("b", 2, 2)}, 3), std::nullopt);
  EXPECT_EQ(detail::fencedBy({trainedIn("a", 2, 4, true), trainedIn("b", 2, 4)}, 3), std::nullopt);
  EXPECT_NE(detail::fencedBy({trainedIn("c", 2, 4), trainedIn("d", 2, 4)}, 3), std::nullopt);
}

// Nodes whose process is gone for sure are on no side: the survivors need
// a majority of the rest. A name that arrived is not gone, whatever a
// record says.
TEST(Fencing, NodesGoneForSureAreCountedOut) {
  EXPECT_EQ(
      detail::fencedBy({trainedIn("b", 0, 4, false, {"d"}), trainedIn("c", 0, 4, false, {"a"})}, 1),
      std::nullopt);  // 2 of the 2 not gone
  EXPECT_NE(detail::fencedBy({trainedIn("b", 0, 4, false, {"c"}), trainedIn("c", 0, 4)}, 1),
            std::nullopt);  // c is here: 2 of 4, without node 0
}

// Only the latest round trained counts: a node that missed it does not.
TEST(Fencing, ArrivalsOfAnOlderRoundDoNotCount) {
  EXPECT_NE(detail::fencedBy({trainedIn("a", 5, 3), trainedIn("b", 4, 2), trainedIn("c", 4, 2)}, 6),
            std::nullopt);
}

TEST(Fencing, ARecordCarriesWhereItsNodeLastTrained) {
  const NodeRecord r = trainedIn("b", 7, 3, true, {"a", "c"});
  const NodeRecord back = detail::decodeRecord(detail::encodeRecord(r));
  EXPECT_EQ(back.trained.round, 7);
  EXPECT_EQ(back.trained.numNodes, 3);
  EXPECT_TRUE(back.trained.wasNodeZero);
  EXPECT_EQ(back.trained.gone, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(back.name, "b");
}

TEST(PlanRound, ArrivalOrderGivesNodeRanksAndContiguousFirstRanks) {
  RoundPlan plan = detail::planRound({node("a", 2), node("b", 3), node("c", 1)}, {}, 0, 1);
  EXPECT_EQ(plan.nodeRank, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(plan.firstRank, (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(plan.worldSize, 6);
  EXPECT_EQ(plan.numNodes, 3);
  EXPECT_EQ(plan.master, 0u);
}

TEST(PlanRound, PreferredRanksOrderTheNodesAndAreCompacted) {
  // Slurm ids 5, 2, 9 (node 0 and others gone): ranks 1, 0, 2.
  RoundPlan plan = detail::planRound({node("a", 2, 5), node("b", 3, 2), node("c", 1, 9)}, {}, 0, 1);
  EXPECT_EQ(plan.nodeRank, (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(plan.firstRank, (std::vector<int>{3, 0, 5}));
  EXPECT_EQ(plan.master, 1u);
  EXPECT_EQ(plan.successors[0].host, "b.host");
}

TEST(PlanRound, OneMemberWithoutAPreferredRankMeansArrivalOrder) {
  RoundPlan plan = detail::planRound({node("a", 1, 1), node("b", 1), node("c", 1, 0)}, {}, 0, 1);
  EXPECT_EQ(plan.nodeRank, (std::vector<int>{0, 1, 2}));
}

// Every Slurm step numbers its nodes from 0: a node started by a second
// srun (step 7.1) has node id 0 as step 7.0's first node has. Ids of two
// steps are not one numbering, so the round goes by arrival.
TEST(PlanRound, PreferredRanksOfTwoSlurmStepsMeanArrivalOrder) {
  const NodeRecord a = node("a", 1, 0, "7.0"), b = node("b", 1, 1, "7.0");
  const NodeRecord c = node("c", 1, 0, "7.1");
  RoundPlan plan = detail::planRound({b, c, a}, {}, 0, 1);
  EXPECT_EQ(plan.nodeRank, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(plan.master, 0u);
  EXPECT_EQ(detail::planRound({b, a}, {}, 0, 1).nodeRank, (std::vector<int>{1, 0}))
      << "one step's ids are kept";
}

TEST(PlanRound, SuccessorsAreTheFirstEightInNodeRankOrder) {
  std::vector<NodeRecord> arrivals;
  for (int i = 0; i < 12; ++i) arrivals.push_back(node("n" + std::to_string(i), 1, 11 - i));
  RoundPlan plan = detail::planRound(arrivals, {}, 0, 1);
  ASSERT_EQ(plan.successors.size(), static_cast<size_t>(kMaxSuccessors));
  EXPECT_EQ(plan.successors[0].host, "n11.host");
  EXPECT_EQ(plan.successors[7].host, "n4.host");
  EXPECT_EQ(plan.successors[7].port, 7002);
}

TEST(PlanRound, ExcludedNodesAreLeftOutAndNamed) {
  FailureTable failures{{"b", {3, 4}}, {"c", {4}}};
  RoundPlan plan = detail::planRound({node("a"), node("b", 4), node("c")}, failures, 5, 2);
  EXPECT_EQ(plan.nodeRank, (std::vector<int>{0, -1, 1}));
  EXPECT_EQ(plan.rejoinRound[1], 6);
  EXPECT_EQ(plan.excluded, (std::vector<std::string>{"b"}));
  EXPECT_EQ(plan.worldSize, 2);
  EXPECT_EQ(plan.numNodes, 2);
}

TEST(PlanRound, ExclusionThatWouldLeaveFewerThanMinIsWaived) {
  FailureTable failures{{"b", {3, 4}}};
  RoundPlan plan = detail::planRound({node("a"), node("b"), node("c")}, failures, 5, 3);
  EXPECT_EQ(plan.nodeRank, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(plan.excluded.empty());
}

TEST(ElasticValues, RecordsAndFailureTablesRoundTrip) {
  NodeRecord r = detail::decodeRecord(detail::encodeRecord(node("host-7", 8, 3, "42.1")));
  EXPECT_EQ(r.nproc, 8);
  EXPECT_EQ(r.preferredNodeRank, 3);
  EXPECT_EQ(r.preferredRankScope, "42.1");
  EXPECT_EQ(detail::decodeRecord(detail::encodeRecord(node("h"))).preferredRankScope, "");
  EXPECT_EQ(r.standbyPort, 7006);
  EXPECT_EQ(r.host, "host-7.host");
  EXPECT_EQ(r.name, "host-7");
  FailureTable table{{"a", {1, 2}}, {"b", {7}}};
  EXPECT_EQ(detail::encodeFailures(table), "a 1 2\nb 7\n");
  EXPECT_EQ(detail::decodeFailures("a 1 2\nb 7\n\n"), table);
}

TEST(ElasticValues, OutcomesRoundTrip) {
  RoundPlan plan = detail::planRound({node("a", 2), node("b", 3)}, {{"x", {1}}}, 4, 1);
  ElasticOutcome out = detail::outcomeFor(plan, {node("a", 2), node("b", 3)}, 1, 4);
  out.masterPort = 29500;
  ElasticOutcome back = detail::decodeOutcome(detail::encodeOutcome(out), 4);
  EXPECT_EQ(back.status, ElasticStatus::kJoined);
  EXPECT_EQ(back.round, 4);
  EXPECT_EQ(back.nodeRank, 1);
  EXPECT_EQ(back.firstRank, 2);
  EXPECT_EQ(back.worldSize, 5);
  EXPECT_EQ(back.masterAddr, "a.host");
  EXPECT_EQ(back.masterPort, 29500);
  ASSERT_EQ(back.successors.size(), 2u);
  EXPECT_EQ(back.successors[1].host, "b.host");
  EXPECT_EQ(back.successors[1].port, 7001);
}

TEST(ElasticValues, AFailureDecodesAsItsMessage) {
  try {
    detail::decodeOutcome(detail::encodeFailure("only 1 of the 2 nodes"), 0);
    FAIL() << "expected a RendezvousError";
  } catch (const RendezvousError& e) {
    EXPECT_EQ(std::string(e.what()), "only 1 of the 2 nodes");
  }
}

TEST(ElasticValues, AMalformedValueIsNamed) {
  try {
    detail::decodeRecord("8\nminus one\n0\nh\nn");
    FAIL() << "expected a RendezvousError";
  } catch (const RendezvousError& e) {
    EXPECT_EQ(std::string(e.what()),
              "the rendezvous store holds a malformed node record: '8\nminus one\n0\nh\nn'");
  }
  EXPECT_THROW(detail::decodeOutcome("joined\n1", 0), RendezvousError);
  EXPECT_THROW(detail::decodeOutcome("something else", 0), RendezvousError);
}

}  // namespace
}  // namespace distrun::rdzv
