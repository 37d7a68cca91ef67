#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "distrun/rdzv/store.h"

namespace distrun::comm {

// Which ranks of a communicator share a node, from the node name each rank
// gives: a node's ranks are listed in rank order, its leader is its lowest
// rank, and the nodes are numbered in the order of their leaders. A value;
// every rank computes the same one from the same names.
class NodeLayout {
 public:
  NodeLayout() = default;
  // `nodeOfRank[r]` names rank r's node; `rank` is this rank.
  NodeLayout(const std::vector<std::string>& nodeOfRank, int rank);

  // Publishes this rank's node name under `prefix`/node/RANK and reads
  // every rank's (waiting up to `timeout` for each).
  static NodeLayout exchange(rdzv::Store& store, const std::string& prefix, int rank, int size,
                             const std::string& node, std::chrono::milliseconds timeout);

  int nodes() const { return static_cast<int>(leaders_.size()); }
  // The ranks of every node.
  size_t ranks() const { return nodeOfRank_.size(); }
  // Whether the hierarchical path gains anything: more than one node, and
  // some node with more than one rank.
  bool spansNodesWithNeighbours() const;
  // This rank's node: its ranks (global, ascending), this rank's index
  // among them, and the node's number.
  const std::vector<int>& neighbours() const {
    static const std::vector<int> kNone;
    return ranksOfNode_.empty() ? kNone : ranksOf(node_);
  }
  int localRank() const { return localRank_; }
  int node() const { return node_; }
  bool isLeader() const { return localRank_ == 0; }
  int leader() const { return neighbours().front(); }
  // The node of rank r, and r's index among its node's ranks.
  int nodeOf(int r) const { return nodeOfRank_[static_cast<size_t>(r)]; }
  int localRankOf(int r) const { return localRankOf_[static_cast<size_t>(r)]; }
  // Each node's leader (global rank), by node number.
  const std::vector<int>& leaders() const { return leaders_; }
  // The ranks of node `node` (global, ascending).
  const std::vector<int>& ranksOf(int node) const {
    return ranksOfNode_[static_cast<size_t>(node)];
  }

 private:
  std::vector<std::vector<int>> ranksOfNode_;
  std::vector<int> leaders_;
  std::vector<int> nodeOfRank_;
  std::vector<int> localRankOf_;
  int localRank_ = 0;
  int node_ = 0;
};

}  // namespace distrun::comm
