#pragma once

// The node-by-network collectives (docs/comm.md, "Across nodes"): within
// each node, then among one leader per node, then within each node again.
// Written once over two stages, so that any node-local engine pairs with
// any cross-node one: the Gloo backend runs them on its shared-memory
// engine and its leaders' mesh, HierarchicalCommunicator on any two
// Communicators.

#include <cstddef>
#include <vector>

#include "distrun/comm/dtype.h"
#include "distrun/comm/hierarchical/node_layout.h"

namespace distrun::comm {

// The collectives among one node's ranks that the hierarchy needs, the
// ranks numbered by their local rank. `op` names the operation the user
// called, for an error.
class NodeStage {
 public:
  virtual ~NodeStage() = default;
  // out = OP over the node's `in`, on every rank of the node.
  virtual void allreduce(const char* op, const void* in, void* out, size_t count, DataType type,
                         ReduceOp reduce) = 0;
  virtual void broadcast(const char* op, const void* in, void* out, size_t count, DataType type,
                         int localRoot) = 0;
  // out holds the node's blocks of `count`, in local rank order.
  virtual void allgather(const char* op, const void* in, void* out, size_t count,
                         DataType type) = 0;
  virtual void barrier(const char* op) = 0;
};

// The collectives among the nodes' leaders, the leaders numbered by node.
class LeaderStage {
 public:
  virtual ~LeaderStage() = default;
  virtual void allreduce(const char* op, const void* in, void* out, size_t count, DataType type,
                         ReduceOp reduce) = 0;
  virtual void broadcast(const char* op, const void* in, void* out, size_t count, DataType type,
                         int rootNode) = 0;
  // out holds node n's counts[n] elements after those of node n - 1.
  virtual void allgatherv(const char* op, const void* in, void* out,
                          const std::vector<size_t>& counts, DataType type) = 0;
  // counts[n] elements go to node n and come from it, in node order.
  virtual void alltoallv(const char* op, const void* in, void* out,
                         const std::vector<size_t>& counts, DataType type) = 0;
  virtual void barrier(const char* op) = 0;
};

// The collectives of a communicator whose ranks span nodes, with the
// Communicator's arguments and contract (communicator.h); world ranks.
// reduce_scatter is the caller's (an allreduce that keeps a block), and so
// are send and recv.
class Hierarchy {
 public:
  // `node` is null for a rank alone on its node, `leaders` on a rank that
  // is not its node's leader; both outlive the hierarchy.
  Hierarchy(NodeLayout layout, NodeStage* node, LeaderStage* leaders);

  void allreduce(const char* op, const void* in, void* out, size_t count, DataType type,
                 ReduceOp reduce);
  void broadcast(const void* in, void* out, size_t count, DataType type, int root);
  void allgather(const void* in, void* out, size_t count, DataType type);
  void alltoall(const void* in, void* out, size_t count, DataType type);
  void barrier();

  const NodeLayout& layout() const { return layout_; }

 private:
  void exchangeAlltoallBlocks(const std::vector<char>& fromNode, std::vector<char>& forNode,
                              size_t count, DataType type);

  NodeLayout layout_;
  NodeStage* node_;
  LeaderStage* leaders_;
  // Reused: allgather's this node's blocks and, on a leader, every node's;
  // alltoall's blocks from this node and for it, and a leader's blocks
  // sent and received.
  std::vector<char> scratch_[4];
};

}  // namespace distrun::comm
