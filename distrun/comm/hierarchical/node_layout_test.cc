#include "distrun/comm/hierarchical/node_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "distrun/common/error.h"
#include "distrun/rdzv/in_memory_store.h"

namespace distrun::comm {
namespace {

using ::testing::ElementsAre;

TEST(NodeLayoutTest, NodesAreNumberedByTheirLowestRank) {
  const std::vector<std::string> nodes = {"b", "a", "b", "a", "c"};
  const NodeLayout third(nodes, 2);
  EXPECT_EQ(third.nodes(), 3);
  EXPECT_THAT(third.leaders(), ElementsAre(0, 1, 4));
  EXPECT_THAT(third.neighbours(), ElementsAre(0, 2));
  EXPECT_EQ(third.node(), 0);
  EXPECT_EQ(third.localRank(), 1);
  EXPECT_FALSE(third.isLeader());
  EXPECT_EQ(third.leader(), 0);
  EXPECT_EQ(third.nodeOf(3), 1);
  EXPECT_EQ(third.localRankOf(3), 1);
  EXPECT_EQ(third.localRankOf(4), 0);
  EXPECT_THAT(third.ranksOf(1), ElementsAre(1, 3));
  EXPECT_THAT(third.ranksOf(2), ElementsAre(4));
  const NodeLayout last(nodes, 4);
  EXPECT_TRUE(last.isLeader());
  EXPECT_THAT(last.neighbours(), ElementsAre(4));
}

TEST(NodeLayoutTest, TheHierarchyIsWorthItOnlyAcrossNodesWithNeighbours) {
  EXPECT_FALSE(NodeLayout({"a", "a", "a"}, 0).spansNodesWithNeighbours());
  EXPECT_FALSE(NodeLayout({"a", "b", "c"}, 0).spansNodesWithNeighbours());
  EXPECT_TRUE(NodeLayout({"a", "b", "b"}, 0).spansNodesWithNeighbours());
  EXPECT_FALSE(NodeLayout({"a"}, 0).spansNodesWithNeighbours());
}

// A rank that never says which node it is on: the others stop at the
// timeout, naming it, instead of waiting on.
TEST(NodeLayoutTest, ARankThatNeverSaysItsNodeIsATimeoutNamingIt) {
  rdzv::InMemoryStore store;
  try {
    NodeLayout::exchange(store, "test", 0, 2, "a", std::chrono::milliseconds(200));
    ADD_FAILURE() << "the exchange returned without rank 1";
  } catch (const TimeoutError& e) {
    EXPECT_EQ(std::string(e.what()),
              "communicator: rank 1 did not say which node it is on within 0.2 s");
    EXPECT_EQ(e.exitCode(), ExitCode::kTimeout);
  }
}

}  // namespace
}  // namespace distrun::comm
