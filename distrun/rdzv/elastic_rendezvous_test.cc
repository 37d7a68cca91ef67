// The elastic rendezvous against a real store, agents as threads.
#include "distrun/rdzv/elastic_rendezvous.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/rdzv/elastic_plan.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"

namespace distrun::rdzv {
namespace {

using namespace std::chrono_literals;
constexpr auto kGenerousJoin = 60s;  // a join budget no healthy run nears
constexpr auto kForever = 3600s;     // a lastCall that must never be what closes a round
constexpr int kMasterPort = 29500;

class ElasticTest : public ::testing::Test {
 protected:
  ElasticJoin join(const std::string& name, int minNodes, int maxNodes) {
    ElasticJoin j;
    j.minNodes = minNodes;
    j.maxNodes = maxNodes;
    j.host = name + ".example";
    j.standbyPort = 7000 + static_cast<int>(std::hash<std::string>()(name) % 1000);
    j.nodeName = name;
    j.joinTimeout = kGenerousJoin;
    j.lastCall = kForever;
    j.pickMasterPort = [] { return kMasterPort; };
    return j;
  }
  StoreClient client() { return StoreClient("127.0.0.1", server.port(), "t", kGenerousJoin); }
  ElasticOutcome run(int round, const ElasticJoin& j) {
    StoreClient c = client();
    return joinElasticRound(c, round, j);
  }
  std::future<ElasticOutcome> start(int round, ElasticJoin j) {
    return std::async(std::launch::async, [this, round, j] { return run(round, j); });
  }
  // Waits until `n` agents have arrived at `round` (the arrival counter).
  void awaitArrivals(int round, long long n) {
    StoreClient c = client();
    while (c.add("e" + std::to_string(round) + "/arrived", 0) < n) std::this_thread::sleep_for(1ms);
  }
  StoreServer server{"127.0.0.1", 0, "t"};
};

std::vector<ElasticOutcome> all(std::vector<std::future<ElasticOutcome>>& agents) {
  std::vector<ElasticOutcome> out;
  for (auto& a : agents) out.push_back(a.get());
  return out;
}

TEST_F(ElasticTest, MinReachedThenLastCallClosesTheRound) {
  std::vector<std::future<ElasticOutcome>> agents;
  for (const char* name : {"a", "b"}) {
    ElasticJoin j = join(name, 2, 4);
    j.lastCall = 50ms;
    agents.push_back(start(0, j));
  }
  for (const ElasticOutcome& o : all(agents)) {
    EXPECT_EQ(o.status, ElasticStatus::kJoined);
    EXPECT_EQ(o.numNodes, 2);
    EXPECT_EQ(o.worldSize, 2);
  }
}

// lastCall is an hour: the round can only have closed because MAX arrived.
TEST_F(ElasticTest, MaxArrivalsCloseTheRoundAtOnce) {
  std::vector<std::future<ElasticOutcome>> agents;
  for (const char* name : {"a", "b", "c"}) agents.push_back(start(0, join(name, 1, 3)));
  for (const ElasticOutcome& o : all(agents)) {
    EXPECT_EQ(o.status, ElasticStatus::kJoined);
    EXPECT_EQ(o.numNodes, 3);
  }
}

TEST_F(ElasticTest, ALateArrivalWaitsAndIsCountedOnce) {
  std::vector<std::future<ElasticOutcome>> agents;
  for (const char* name : {"a", "b"}) {
    ElasticJoin j = join(name, 2, 3);
    j.lastCall = 10ms;
    agents.push_back(start(0, j));
  }
  all(agents);
  ElasticOutcome late = run(0, join("late", 2, 3));
  EXPECT_EQ(late.status, ElasticStatus::kWaiting);
  EXPECT_EQ(late.numNodes, 2);
  StoreClient c = client();
  EXPECT_EQ(waitingNodes(c, 0), 1);
  announceWaiting(c, 0, "late");  // again: still one node
  EXPECT_EQ(waitingNodes(c, 0), 1);
  EXPECT_EQ(waitingNodes(c, 1), 0);
  // The members re-form with it.
  agents.clear();
  for (const char* name : {"a", "b", "late"}) agents.push_back(start(1, join(name, 2, 3)));
  for (const ElasticOutcome& o : all(agents)) EXPECT_EQ(o.numNodes, 3);
}

TEST_F(ElasticTest, AnArrivalAtAFullRoundWaitsWithoutAskingForARound) {
  std::vector<std::future<ElasticOutcome>> agents;
  for (const char* name : {"a", "b"}) agents.push_back(start(0, join(name, 2, 2)));
  all(agents);
  ElasticOutcome late = run(0, join("late", 2, 2));
  EXPECT_EQ(late.status, ElasticStatus::kWaiting);
  EXPECT_EQ(late.numNodes, 2);
  StoreClient c = client();
  EXPECT_EQ(waitingNodes(c, 0), 0);
}

// lastCall 0: every arrival from MIN on races to close the round at once.
// Exactly one closes it: the members agree on one size, hold node ranks
// 0..N-1 once each, and everyone else waits.
TEST_F(ElasticTest, ExactlyOneClosureUnderConcurrentArrivals) {
  constexpr int kAgents = 12, kMin = 4, kMax = 8;
  for (int round = 0; round < 15; ++round) {
    std::vector<std::future<ElasticOutcome>> agents;
    for (int i = 0; i < kAgents; ++i) {
      ElasticJoin j = join("n" + std::to_string(i), kMin, kMax);
      j.lastCall = 0ms;
      j.nproc = 1 + i % 3;
      agents.push_back(start(round, j));
    }
    std::vector<ElasticOutcome> outcomes = all(agents);
    std::set<int> ranks, sizes;
    int joined = 0;
    for (const ElasticOutcome& o : outcomes) {
      if (o.status != ElasticStatus::kJoined) continue;
      joined++;
      ranks.insert(o.nodeRank);
      sizes.insert(o.numNodes);
    }
    ASSERT_EQ(sizes.size(), 1u) << "round " << round;
    EXPECT_EQ(*sizes.begin(), joined);
    EXPECT_LE(joined, kMax);
    EXPECT_GE(joined, kMin);
    EXPECT_EQ(ranks.size(), static_cast<size_t>(joined));
    EXPECT_EQ(*ranks.rbegin(), joined - 1);
  }
}

TEST_F(ElasticTest, PreferredNodeRanksAreKept) {
  std::vector<std::future<ElasticOutcome>> agents;
  const int preferred[] = {2, 0, 1};
  for (int i = 0; i < 3; ++i) {
    ElasticJoin j = join("n" + std::to_string(i), 3, 3);
    j.preferredNodeRank = preferred[i];
    j.nproc = 4;
    agents.push_back(start(0, j));
  }
  std::vector<ElasticOutcome> outcomes = all(agents);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(outcomes[static_cast<size_t>(i)].nodeRank, preferred[i]);
    EXPECT_EQ(outcomes[static_cast<size_t>(i)].firstRank, 4 * preferred[i]);
    EXPECT_EQ(outcomes[static_cast<size_t>(i)].masterAddr, "n1.example");
  }
}

// Whatever the arrival order, ranks run contiguously through the nodes in
// node-rank order, and node rank 0 alone picked the master port.
TEST_F(ElasticTest, RanksAreContiguousWithUnequalWorkerCounts) {
  std::vector<std::future<ElasticOutcome>> agents;
  std::atomic<int> picks{0};
  const int nproc[] = {2, 3, 1, 5};
  for (int i = 0; i < 4; ++i) {
    ElasticJoin j = join("n" + std::to_string(i), 4, 4);
    j.nproc = nproc[i];
    j.pickMasterPort = [&picks] { return kMasterPort + picks++; };
    agents.push_back(start(0, j));
  }
  std::vector<ElasticOutcome> outcomes = all(agents);
  std::vector<std::pair<int, int>> byRank;  // (node rank, arrival)
  for (int i = 0; i < 4; ++i) byRank.emplace_back(outcomes[static_cast<size_t>(i)].nodeRank, i);
  std::sort(byRank.begin(), byRank.end());
  int next = 0;
  for (auto [rank, i] : byRank) {
    const ElasticOutcome& o = outcomes[static_cast<size_t>(i)];
    EXPECT_EQ(o.firstRank, next) << "node rank " << rank;
    EXPECT_EQ(o.worldSize, 11);
    EXPECT_EQ(o.masterPort, kMasterPort);
    EXPECT_EQ(o.masterAddr, "n" + std::to_string(byRank[0].second) + ".example");
    next += nproc[i];
  }
  EXPECT_EQ(picks.load(), 1);
}

TEST_F(ElasticTest, TheTimeoutNamesWhoJoinedHowManyOfMinAndTheStore) {
  ElasticJoin alpha = join("alpha", 3, 4), beta = join("beta", 3, 4);
  alpha.joinTimeout = beta.joinTimeout = 250ms;
  auto first = start(0, alpha);
  awaitArrivals(0, 1);
  auto second = start(0, beta);
  const std::string expected =
      "only 2 of the 3 nodes needed (--nnodes 3:4) joined round 0 within 0.25 s (joined: alpha, "
      "beta); they met at the rendezvous store at 127.0.0.1:" +
      std::to_string(server.port());
  for (auto* agent : {&first, &second}) {
    try {
      agent->get();
      ADD_FAILURE() << "expected a RendezvousError";
    } catch (const RendezvousError& e) {
      EXPECT_EQ(std::string(e.what()), expected);
      EXPECT_EQ(e.exitCode(), ExitCode::kRendezvous);
    }
  }
  // A node arriving afterwards is told the same, not left waiting.
  EXPECT_THAT([&] { run(0, join("gamma", 3, 4)); },
              ::testing::ThrowsMessage<RendezvousError>(::testing::StrEq(expected)));
}

// The failures of agents that stop half-way, played by a bare client.
TEST_F(ElasticTest, AnArrivalThatNeverPublishedItsNodeFailsTheRoundNamingIt) {
  StoreClient stopped = client();
  stopped.add("e0/arrived", 1);  // arrived, then stopped
  ElasticJoin j = join("b", 2, 2);
  j.joinTimeout = 200ms;
  EXPECT_THAT([&] { run(0, j); },
              ::testing::ThrowsMessage<RendezvousError>(::testing::StrEq(
                  "round 0 closed with 2 nodes, but arrival(s) 1 never published their node "
                  "within 0.2 s (an agent that stopped while joining); the rendezvous store is at "
                  "127.0.0.1:" +
                  std::to_string(server.port()))));
  EXPECT_THAT(stopped.tryGet("e0/out/1").value_or(""), ::testing::StartsWith("failed\nround 0"));
}

TEST_F(ElasticTest, ANodeRankZeroThatNeverPicksItsPortFailsTheRoundNamingIt) {
  StoreClient stopped = client();
  stopped.add("e0/arrived", 1);
  stopped.set("e0/node/1", detail::encodeRecord({1, -1, "", 7000, "a.example", "a"}));
  ElasticJoin j = join("b", 2, 2);
  j.joinTimeout = 200ms;
  EXPECT_THAT([&] { run(0, j); },
              ::testing::ThrowsMessage<RendezvousError>(::testing::StrEq(
                  "node rank 0 of round 0 (a) did not pick its MASTER_PORT within 0.2 s; the "
                  "rendezvous store is at 127.0.0.1:" +
                  std::to_string(server.port()))));
}

TEST_F(ElasticTest, AClosingAgentThatVanishesIsReported) {
  ElasticJoin j = join("a", 1, 3);
  j.lastCall = 50ms;
  j.joinTimeout = 100ms;
  auto member = start(0, j);
  awaitArrivals(0, 1);
  client().add("e0/arrived", 1LL << 40);  // closes the round, then stops
  EXPECT_THAT([&] { member.get(); },
              ::testing::ThrowsMessage<RendezvousError>(::testing::StrEq(
                  "round 0 closed, but the agent that closed it published no outcome within "
                  "0.2 s (it stopped while planning the round); the rendezvous store is at "
                  "127.0.0.1:" +
                  std::to_string(server.port()))));
}

TEST_F(ElasticTest, ANodeThatFailedTwoRoundsInARowIsLeftOutOfTheNext) {
  StoreClient c = client();
  recordNodeFailure(c, 0, "bad");
  recordNodeFailure(c, 1, "bad");
  recordNodeFailure(c, 1, "bad");  // recorded by two agents: once
  std::vector<std::future<ElasticOutcome>> agents;
  for (const char* name : {"good1", "bad", "good2"}) agents.push_back(start(2, join(name, 1, 3)));
  std::vector<ElasticOutcome> outcomes = all(agents);
  EXPECT_EQ(outcomes[1].status, ElasticStatus::kExcluded);
  EXPECT_EQ(outcomes[1].rejoinRound, 3);
  for (size_t i : {0u, 2u}) {
    EXPECT_EQ(outcomes[i].status, ElasticStatus::kJoined);
    EXPECT_EQ(outcomes[i].numNodes, 2);
    EXPECT_EQ(outcomes[i].excluded, (std::vector<std::string>{"bad"}));
  }
  // Round 3 takes it back.
  agents.clear();
  for (const char* name : {"good1", "bad", "good2"}) agents.push_back(start(3, join(name, 1, 3)));
  for (const ElasticOutcome& o : all(agents)) EXPECT_EQ(o.numNodes, 3);
}

TEST_F(ElasticTest, ExclusionThatWouldLeaveFewerThanMinTakesTheNodeIn) {
  StoreClient c = client();
  recordNodeFailure(c, 0, "bad");
  recordNodeFailure(c, 1, "bad");
  std::vector<std::future<ElasticOutcome>> agents;
  for (const char* name : {"good", "bad"}) agents.push_back(start(2, join(name, 2, 2)));
  for (const ElasticOutcome& o : all(agents)) {
    EXPECT_EQ(o.status, ElasticStatus::kJoined);
    EXPECT_TRUE(o.excluded.empty());
  }
}

// Compare-and-set: failures recorded at once by many agents are all kept.
TEST_F(ElasticTest, ConcurrentFailureRecordsAreNotLost) {
  std::vector<std::future<void>> recorders;
  for (int i = 0; i < 16; ++i) {
    recorders.push_back(std::async(std::launch::async, [this, i] {
      StoreClient c = client();
      recordNodeFailure(c, i % 4, "n" + std::to_string(i / 4));
    }));
  }
  for (auto& r : recorders) r.get();
  EXPECT_EQ(client().tryGet("e/failures"), "n0 0 1 2 3\nn1 0 1 2 3\nn2 0 1 2 3\nn3 0 1 2 3\n");
}

TEST_F(ElasticTest, EveryMemberGetsTheFirstEightAsStoreCandidates) {
  std::vector<std::future<ElasticOutcome>> agents;
  for (int i = 0; i < 10; ++i) {
    ElasticJoin j = join("n" + std::to_string(i), 10, 10);
    j.preferredNodeRank = i;
    agents.push_back(start(0, j));
  }
  for (const ElasticOutcome& o : all(agents)) {
    ASSERT_EQ(o.successors.size(), 8u);
    for (int r = 0; r < 8; ++r) {
      const std::string name = "n" + std::to_string(r);
      EXPECT_EQ(o.successors[static_cast<size_t>(r)].host, name + ".example");
      EXPECT_EQ(o.successors[static_cast<size_t>(r)].port, join(name, 1, 1).standbyPort);
    }
  }
}

TEST_F(ElasticTest, TheLatestRoundIsKnownToNewcomers) {
  StoreClient c = client();
  EXPECT_EQ(latestRound(c), std::nullopt);
  run(4, join("a", 1, 1));
  EXPECT_EQ(latestRound(c), 4);
}

TEST_F(ElasticTest, BadRequestsAreConfigErrorsNamingTheField) {
  StoreClient c = client();
  ElasticJoin j = join("a", 3, 2);
  EXPECT_THAT([&] { joinElasticRound(c, 0, j); },
              ::testing::ThrowsMessage<ConfigError>(
                  ::testing::StrEq("elastic rendezvous: --nnodes 3:2: expected 1 <= MIN <= MAX")));
  j = join("a", 1, 2);
  j.nodeName = "two words";
  EXPECT_THAT([&] { joinElasticRound(c, 0, j); },
              ::testing::ThrowsMessage<ConfigError>(::testing::StrEq(
                  "elastic rendezvous: node name 'two words' must be non-empty and hold no "
                  "white space")));
  j = join("a", 1, 2);
  j.preferredRankScope = "7.0\nx";
  EXPECT_THAT([&] { joinElasticRound(c, 0, j); },
              ::testing::ThrowsMessage<ConfigError>(::testing::StrEq(
                  "elastic rendezvous: preferred rank scope '7.0\nx' must hold no white space")));
  EXPECT_EQ(ConfigError("").exitCode(), ExitCode::kConfig);
  EXPECT_EQ(c.tryGet("e0/arrived"), std::nullopt);  // nothing was joined
}

}  // namespace
}  // namespace distrun::rdzv
