// The hierarchical path of the Gloo backend, for ranks on several nodes
// (docs/comm.md, "Across nodes"): each node's shared-memory collectives and
// the mesh of the nodes' leaders.
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "distrun/comm/gloo/gloo_communicator.h"

namespace distrun::comm {

// One segment per node with several ranks, made by its leader.
void GlooCommunicator::attachNodeMemory() {
  const size_t slot = options_.sharedSlotBytes;
  const int ranks = static_cast<int>(layout_.neighbours().size());
  std::unique_ptr<SharedMemoryCollectives> attached;
  const bool everyone = shareSegment(
      fmt::format("{}/shm/node/{}/name", prefix_, layout_.node()),
      SharedMemoryCollectives::segmentBytes(ranks, slot), layout_.leader(),
      [&](SharedSegment& segment) { SharedMemoryCollectives::format(segment, ranks, slot); },
      [&](SharedSegment segment) {
        attached = std::make_unique<SharedMemoryCollectives>(
            std::move(segment), layout_.localRank(), ranks, slot, options_.timeout);
      },
      "shared memory within this node, the ranks use TCP", /*sharing=*/ranks > 1);
  if (!everyone) {
    leaders_.reset();
    return;
  }
  node_ = std::move(attached);
  acrossNodes_ = true;
  attachMessages(fmt::format("{}/shm/node/{}/messages", prefix_, layout_.node()), layout_.leader(),
                 node_.get(), "shared-memory send and recv within this node, they use TCP");
  onNodeRanksAttached(node_.get());
}

// This node's ranks reduce into every one's `out`, the leaders reduce
// their nodes' results, and each leader gives the total to its node: every
// rank ends with the leaders' bits.
void GlooCommunicator::allreduceAcrossNodes(const char* name, const void* in, void* out,
                                            size_t count, DataType type, ReduceOp op) {
  if (node_) {
    onThisNode(name, [&](SharedMemoryCollectives& s) { s.run(in, out, count, type, op); });
  } else if (in != out) {
    std::memcpy(out, in, count * sizeOf(type));
  }
  if (leaders_) allreduceOnMesh(name, *leaders_, out, out, count, type, op);
  onThisNode(name, [&](SharedMemoryCollectives& s) { s.broadcast(out, out, count, type, 0); });
  noteAlgorithm("hierarchical");
}

// The root's node gets the data first, then the leaders from the root
// node's leader, then the other nodes from their leaders.
void GlooCommunicator::broadcastAcrossNodes(const void* in, void* out, size_t count, DataType type,
                                            int root) {
  const int rootNode = layout_.nodeOf(root);
  const bool onRootNode = layout_.node() == rootNode;
  if (onRootNode) {
    if (node_) {
      onThisNode("broadcast", [&](SharedMemoryCollectives& s) {
        s.broadcast(in, out, count, type, layout_.localRankOf(root));
      });
    } else if (in != out) {
      std::memcpy(out, in, count * sizeOf(type));
    }
  }
  if (leaders_) {
    guarded("broadcast", [&] { leaders_->broadcast(out, out, count, type, rootNode); });
  }
  if (!onRootNode) {
    onThisNode("broadcast",
               [&](SharedMemoryCollectives& s) { s.broadcast(out, out, count, type, 0); });
  }
  noteAlgorithm("hierarchical");
}

// This node's blocks meet in shared memory, the leaders exchange their
// nodes' blocks (each node's in its ranks' order, so of different sizes
// where nodes hold different numbers of ranks), each leader puts every
// block at its rank's place, and gives the whole to its node.
void GlooCommunicator::allgatherAcrossNodes(const void* in, void* out, size_t count,
                                            DataType type) {
  const size_t block = count * sizeOf(type);
  std::vector<char>& thisNode = acrossScratch_[0];
  thisNode.resize(block * layout_.neighbours().size());
  if (node_) {
    onThisNode("allgather",
               [&](SharedMemoryCollectives& s) { s.allgather(in, thisNode.data(), count, type); });
  } else {
    std::memcpy(thisNode.data(), in, block);
  }
  if (leaders_) {
    std::vector<char>& everyNode = acrossScratch_[1];
    everyNode.resize(block * static_cast<size_t>(size()));
    std::vector<size_t> counts;
    for (int n = 0; n < layout_.nodes(); ++n) counts.push_back(count * layout_.ranksOf(n).size());
    guarded("allgather",
            [&] { leaders_->allgatherv(thisNode.data(), everyNode.data(), counts, type); });
    const char* next = everyNode.data();
    for (int n = 0; n < layout_.nodes(); ++n) {
      for (int r : layout_.ranksOf(n)) {
        std::memcpy(static_cast<char*>(out) + block * static_cast<size_t>(r), next, block);
        next += block;
      }
    }
  }
  onThisNode("allgather", [&](SharedMemoryCollectives& s) {
    s.broadcast(out, out, count * static_cast<size_t>(size()), type, 0);
  });
  noteAlgorithm("hierarchical");
}

// Each node's ranks gather their whole inputs through the segment; the
// leaders exchange what each node's ranks send the other node's (Gloo's
// alltoallv: node A gives node B, for each of A's ranks in turn, its blocks
// for B's ranks); each leader puts every block its node receives at its
// place, rank by rank, and gives the whole to its node, whose ranks each
// keep their part. Each block crosses the network once, in one message per
// pair of nodes where the mesh of all ranks sends one per pair of ranks.
void GlooCommunicator::alltoallAcrossNodes(const void* in, void* out, size_t count, DataType type) {
  const size_t block = count * sizeOf(type);
  const size_t ranks = static_cast<size_t>(size());
  const std::vector<int>& here = layout_.neighbours();
  // Block (local rank l -> rank d) at [l * ranks + d]; (rank s -> local rank
  // l) likewise in `forNode`.
  std::vector<char>& fromNode = acrossScratch_[0];
  std::vector<char>& forNode = acrossScratch_[1];
  fromNode.resize(block * ranks * here.size());
  forNode.resize(block * ranks * here.size());
  if (node_) {
    onThisNode("alltoall", [&](SharedMemoryCollectives& s) {
      s.allgather(in, fromNode.data(), count * ranks, type);
    });
  } else {
    std::memcpy(fromNode.data(), in, block * ranks);
  }
  if (leaders_) exchangeAlltoallBlocks(fromNode, forNode, count, type);
  onThisNode("alltoall", [&](SharedMemoryCollectives& s) {
    s.broadcast(forNode.data(), forNode.data(), count * ranks * here.size(), type, 0);
  });
  std::memcpy(out, forNode.data() + block * ranks * static_cast<size_t>(layout_.localRank()),
              block * ranks);
  noteAlgorithm("hierarchical");
}

// The leaders' part of alltoallAcrossNodes: `fromNode`'s blocks, ordered by
// the node they go to, over TCP; the blocks received, from `forNode`'s
// places.
void GlooCommunicator::exchangeAlltoallBlocks(const std::vector<char>& fromNode,
                                              std::vector<char>& forNode, size_t count,
                                              DataType type) {
  const size_t block = count * sizeOf(type);
  const size_t ranks = static_cast<size_t>(size());
  const size_t local = layout_.neighbours().size();
  std::vector<char>& sending = acrossScratch_[2];
  std::vector<char>& receiving = acrossScratch_[3];
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
  guarded("alltoall",
          [&] { leaders_->alltoallv(sending.data(), receiving.data(), counts, counts, type); });
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

void GlooCommunicator::barrierAcrossNodes() {
  onThisNode("barrier", [](SharedMemoryCollectives& s) { s.barrier(); });
  if (leaders_) guarded("barrier", [&] { leaders_->barrier(); });
  onThisNode("barrier", [](SharedMemoryCollectives& s) { s.barrier(); });
  noteAlgorithm("hierarchical");
}

void GlooCommunicator::onThisNode(const char* op,
                                  const std::function<void(SharedMemoryCollectives&)>& call) {
  if (node_)
    guardedShared(
        op, [&] { call(*node_); }, layout_.neighbours());
}

}  // namespace distrun::comm
