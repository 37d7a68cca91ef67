#include "distrun/comm/hierarchical/hierarchy.h"

#include <cstring>
#include <utility>

namespace distrun::comm {

Hierarchy::Hierarchy(NodeLayout layout, NodeStage* node, LeaderStage* leaders)
    : layout_(std::move(layout)), node_(node), leaders_(leaders) {}

// This node's ranks reduce into every one's `out`, the leaders reduce
// their nodes' results, and each leader gives the total to its node: every
// rank ends with the leaders' bits.
void Hierarchy::allreduce(const char* op, const void* in, void* out, size_t count, DataType type,
                          ReduceOp reduce) {
  if (node_) {
    node_->allreduce(op, in, out, count, type, reduce);
  } else if (in != out) {
    std::memcpy(out, in, count * sizeOf(type));
  }
  if (leaders_) leaders_->allreduce(op, out, out, count, type, reduce);
  if (node_) node_->broadcast(op, out, out, count, type, 0);
}

// The root's node gets the data first, then the leaders from the root
// node's leader, then the other nodes from their leaders.
void Hierarchy::broadcast(const void* in, void* out, size_t count, DataType type, int root) {
  const int rootNode = layout_.nodeOf(root);
  const bool onRootNode = layout_.node() == rootNode;
  if (onRootNode) {
    if (node_) {
      node_->broadcast("broadcast", in, out, count, type, layout_.localRankOf(root));
    } else if (in != out) {
      std::memcpy(out, in, count * sizeOf(type));
    }
  }
  if (leaders_) leaders_->broadcast("broadcast", out, out, count, type, rootNode);
  if (!onRootNode && node_) node_->broadcast("broadcast", out, out, count, type, 0);
}

// This node's blocks meet within the node, the leaders exchange their
// nodes' blocks (each node's in its ranks' order, so of different sizes
// where nodes hold different numbers of ranks), each leader puts every
// block at its rank's place, and gives the whole to its node.
void Hierarchy::allgather(const void* in, void* out, size_t count, DataType type) {
  const size_t block = count * sizeOf(type);
  std::vector<char>& thisNode = scratch_[0];
  thisNode.resize(block * layout_.neighbours().size());
  if (node_) {
    node_->allgather("allgather", in, thisNode.data(), count, type);
  } else {
    std::memcpy(thisNode.data(), in, block);
  }
  if (leaders_) {
    std::vector<char>& everyNode = scratch_[1];
    everyNode.resize(block * layout_.ranks());
    std::vector<size_t> counts;
    for (int n = 0; n < layout_.nodes(); ++n) counts.push_back(count * layout_.ranksOf(n).size());
    leaders_->allgatherv("allgather", thisNode.data(), everyNode.data(), counts, type);
    const char* next = everyNode.data();
    for (int n = 0; n < layout_.nodes(); ++n) {
      for (int r : layout_.ranksOf(n)) {
        std::memcpy(static_cast<char*>(out) + block * static_cast<size_t>(r), next, block);
        next += block;
      }
    }
  }
  if (node_) node_->broadcast("allgather", out, out, count * layout_.ranks(), type, 0);
}

// Each node's ranks gather their whole inputs; the leaders exchange what
// each node's ranks send the other node's (node A gives node B, for each
// of A's ranks in turn, its blocks for B's ranks); each leader puts every
// block its node receives at its place, rank by rank, and gives the whole
// to its node, whose ranks each keep their part. Each block crosses the
// network once, in one message per pair of nodes where a mesh of all ranks
// sends one per pair of ranks.
void Hierarchy::alltoall(const void* in, void* out, size_t count, DataType type) {
  const size_t block = count * sizeOf(type);
  const size_t ranks = layout_.ranks();
  const size_t here = layout_.neighbours().size();
  // Block (local rank l -> rank d) at [l * ranks + d]; (rank s -> local rank
  // l) likewise in `forNode`.
  std::vector<char>& fromNode = scratch_[0];
  std::vector<char>& forNode = scratch_[1];
  fromNode.resize(block * ranks * here);
  forNode.resize(block * ranks * here);
  if (node_) {
    node_->allgather("alltoall", in, fromNode.data(), count * ranks, type);
  } else {
    std::memcpy(fromNode.data(), in, block * ranks);
  }
  if (leaders_) exchangeAlltoallBlocks(fromNode, forNode, count, type);
  if (node_)
    node_->broadcast("alltoall", forNode.data(), forNode.data(), count * ranks * here, type, 0);
  std::memcpy(out, forNode.data() + block * ranks * static_cast<size_t>(layout_.localRank()),
              block * ranks);
}

// The leaders' part of alltoall: `fromNode`'s blocks, ordered by the node
// they go to; the blocks received, to `forNode`'s places.
void Hierarchy::exchangeAlltoallBlocks(const std::vector<char>& fromNode,
                                       std::vector<char>& forNode, size_t count, DataType type) {
  const size_t block = count * sizeOf(type);
  const size_t ranks = layout_.ranks();
  const size_t local = layout_.neighbours().size();
  std::vector<char>& sending = scratch_[2];
  std::vector<char>& receiving = scratch_[3];
  sending.resize(block * ranks * local);
  receiving.resize(block * ranks * local);
  // Each pair of nodes sends each other as many blocks as it receives.
  std::vector<size_t> counts;
  char* next = sending.data();
  for (int n = 0; n < layout_.nodes(); ++n) {
    for (size_t l = 0; l < local; ++l) {
      for (int d : layout_.ranksOf(n)) {
        std::memcpy(next, fromNode.data() + block * (l * ranks + static_cast<size_t>(d)), block);
        next += block;
      }
    }
    counts.push_back(count * local * layout_.ranksOf(n).size());
  }
  leaders_->alltoallv("alltoall", sending.data(), receiving.data(), counts, type);
  const char* received = receiving.data();
  for (int n = 0; n < layout_.nodes(); ++n) {
    for (int s : layout_.ranksOf(n)) {
      for (size_t l = 0; l < local; ++l) {
        std::memcpy(forNode.data() + block * (l * ranks + static_cast<size_t>(s)), received, block);
        received += block;
      }
    }
  }
}

void Hierarchy::barrier() {
  if (node_) node_->barrier("barrier");
  if (leaders_) leaders_->barrier("barrier");
  if (node_) node_->barrier("barrier");
}

}  // namespace distrun::comm
