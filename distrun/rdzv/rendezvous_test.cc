#include "distrun/rdzv/rendezvous.h"

#include <future>
#include <thread>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/rdzv/in_memory_store.h"

namespace distrun::rdzv {
namespace {

using namespace std::chrono_literals;

class RendezvousTest : public ::testing::Test {
 protected:
  RendezvousConfig config(int node, int nodes, int nproc) {
    RendezvousConfig c;
    c.nodeRank = node;
    c.numNodes = nodes;
    c.nproc = nproc;
    c.host = "host" + std::to_string(node);
    c.joinTimeout = 30s;
    c.pickMasterPort = [] { return 4242; };
    return c;
  }
  // The round protocol alone: every agent (a thread) on one store in memory.
  World join(int round, const RendezvousConfig& c) { return joinRound(store, round, c); }
  InMemoryStore store{"store-host:29400"};
};

TEST_F(RendezvousTest, AgentsAgreeOnRanksAndMasterPort) {
  std::vector<std::future<World>> agents;
  const int nproc[] = {2, 3, 1};
  const int firstRank[] = {0, 2, 5};
  for (int node = 0; node < 3; ++node) {
    agents.push_back(std::async(std::launch::async, [this, node, &nproc] {
      return join(0, config(node, 3, nproc[node]));
    }));
  }
  for (int node = 0; node < 3; ++node) {
    World w = agents[static_cast<size_t>(node)].get();
    EXPECT_EQ(w.worldSize, 6);
    EXPECT_EQ(w.numNodes, 3);
    EXPECT_EQ(w.firstRank, firstRank[node]);
    EXPECT_EQ(w.masterAddr, "host0");
    EXPECT_EQ(w.masterPort, 4242);
  }
}

// A job of one node (soloWorld) is the world a store round of one node
// agrees on, without the store.
TEST_F(RendezvousTest, AOneNodeWorldIsTheOneTheStoreWouldAgreeOn) {
  World stored = join(3, config(0, 1, 4));
  World solo = soloWorld(3, 4, "host0", 4242);
  EXPECT_EQ(std::tie(solo.round, solo.numNodes, solo.worldSize, solo.firstRank, solo.masterAddr,
                     solo.masterPort, solo.nodeRank, solo.restarts),
            std::tie(stored.round, stored.numNodes, stored.worldSize, stored.firstRank,
                     stored.masterAddr, stored.masterPort, stored.nodeRank, stored.restarts));
}

TEST_F(RendezvousTest, RoundsAreIndependent) {
  auto a = std::async(std::launch::async, [&] { return join(1, config(1, 2, 1)); });
  World w0 = join(1, config(0, 2, 4));
  EXPECT_EQ(a.get().worldSize, 5);
  EXPECT_EQ(w0.round, 1);
}

TEST_F(RendezvousTest, MissingNodesAreNamed) {
  RendezvousConfig c = config(0, 3, 1);
  c.joinTimeout = 300ms;
  try {
    join(0, c);
    FAIL();
  } catch (const RendezvousError& e) {
    EXPECT_EQ(std::string(e.what()),
              "node(s) 1, 2 of 3 did not join within 0 s; they were expected "
              "to reach the rendezvous store at store-host:29400 (joined: 0)");
  }
}

TEST_F(RendezvousTest, DuplicateNodeRankIsRefused) {
  RendezvousConfig c = config(1, 2, 1);
  c.joinTimeout = 100ms;
  EXPECT_THROW(join(0, c), RendezvousError);
  try {
    join(0, c);
    FAIL();
  } catch (const RendezvousError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("node rank 1 joined round 0 twice"));
  }
}

}  // namespace
}  // namespace distrun::rdzv
