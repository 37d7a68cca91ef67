#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "distrun/comm/communicator.h"
#include "distrun/comm/hierarchical/hierarchy.h"
#include "distrun/comm/hierarchical/node_layout.h"

namespace distrun::comm {

// The communicators a HierarchicalCommunicator is made of, each already
// connected.
struct HierarchicalParts {
  // Every rank, in world order: send, recv and sendRecv, and the allgathers
  // and alltoalls too large for the hierarchy to pay.
  std::unique_ptr<Communicator> world;
  // This node's ranks, numbered by local rank (NodeLayout); null for a rank
  // alone on its node.
  std::unique_ptr<Communicator> node;
  // The nodes' leaders, numbered by node; null on a rank that is not its
  // node's leader.
  std::unique_ptr<Communicator> leaders;
};

struct HierarchicalOptions {
  // Allgathers whose output is below this many bytes, and alltoalls whose
  // one rank's input is, take the hierarchy; larger ones the world
  // communicator's own (GlooOptions' thresholds, measured for Gloo in
  // docs/comm.md).
  size_t allgatherBelowBytes = 8 << 20;
  size_t alltoallBelowBytes = 1 << 20;
};

// A node-local backend paired with a cross-node one (docs/comm.md, "Across
// nodes"): allreduce, reduce_scatter, broadcast and barrier (and small
// allgathers and alltoalls) within each node, then among one leader per
// node, then within each node again (Hierarchy), over any Communicators:
// the shared-memory collectives of a Gloo communicator on one node with
// Gloo, MPI or NCCL between the nodes. The leaders exchange the nodes'
// blocks of unequal size padded to the largest node's, as the Communicator
// interface has no allgatherv or alltoallv. A part's error reaches the
// caller with the part's rank numbers translated to world ranks; the other
// parts are not told (a rank whose part failed leaves its peers to their
// own failure detection or timeout).
class HierarchicalCommunicator final : public Communicator {
 public:
  // `layout` is the world's, as every rank computes it; the parts' ranks
  // and sizes must match it (UsageError).
  HierarchicalCommunicator(NodeLayout layout, HierarchicalParts parts,
                           HierarchicalOptions options = {});
  ~HierarchicalCommunicator() override;

  std::string_view backend() const override { return "hierarchical"; }
  // "<node's> within each of N nodes, <leaders' backend> between them".
  std::string transport() const override;

 protected:
  void doAllreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) override;
  void doBroadcast(const void* in, void* out, size_t count, DataType type, int root) override;
  void doAllgather(const void* in, void* out, size_t count, DataType type) override;
  void doReduceScatter(const void* in, void* out, size_t count, DataType type,
                       ReduceOp op) override;
  void doAlltoall(const void* in, void* out, size_t count, DataType type) override;
  void doSend(const void* data, size_t count, DataType type, int peer, int tag) override;
  void doRecv(void* data, size_t count, DataType type, int peer, int tag) override;
  void doSendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer, size_t count,
                  DataType type, int tag) override;
  void doBarrier() override;

 private:
  class NodePart;
  class LeadersPart;

  HierarchicalParts parts_;
  HierarchicalOptions options_;
  std::unique_ptr<NodeStage> nodeStage_;
  std::unique_ptr<LeaderStage> leaderStage_;
  Hierarchy hierarchy_;
};

// Runs `call` on part `what` of a hierarchical communicator; its
// CommunicationError or TimeoutError is thrown again with `ranks[i]`, the
// world rank of the part's rank i, in front: "among the nodes' leaders
// (ranks 0, 2 of the world): ...".
void inPart(std::string_view what, const std::vector<int>& ranks,
            const std::function<void()>& call);

}  // namespace distrun::comm
