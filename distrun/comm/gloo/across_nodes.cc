// The hierarchical path of the Gloo backend, for ranks on several nodes
// (docs/comm.md, "Across nodes"): the hierarchy's collectives
// (comm/hierarchical/) on each node's shared-memory collectives and the
// mesh of the nodes' leaders, failing as the communicator does.
#include <fmt/format.h>

#include "distrun/comm/gloo/gloo_communicator.h"

namespace distrun::comm {

// This node's shared-memory collectives, a failure naming the peer by its
// rank in the communicator.
class GlooCommunicator::NodeMemoryStage final : public NodeStage {
 public:
  explicit NodeMemoryStage(GlooCommunicator& comm) : comm_(comm) {}

  void allreduce(const char* op, const void* in, void* out, size_t count, DataType type,
                 ReduceOp reduce) override {
    onNode(op, [&](SharedMemoryCollectives& s) { s.run(in, out, count, type, reduce); });
  }
  void broadcast(const char* op, const void* in, void* out, size_t count, DataType type,
                 int localRoot) override {
    onNode(op, [&](SharedMemoryCollectives& s) { s.broadcast(in, out, count, type, localRoot); });
  }
  void allgather(const char* op, const void* in, void* out, size_t count, DataType type) override {
    onNode(op, [&](SharedMemoryCollectives& s) { s.allgather(in, out, count, type); });
  }
  void barrier(const char* op) override {
    onNode(op, [](SharedMemoryCollectives& s) { s.barrier(); });
  }

 private:
  void onNode(const char* op, const std::function<void(SharedMemoryCollectives&)>& call) {
    comm_.guardedShared(
        op, [&] { call(*comm_.node_); }, comm_.layout_.neighbours());
  }

  GlooCommunicator& comm_;
};

// The leaders' mesh over TCP, guarded as the communicator's own calls are.
class GlooCommunicator::LeadersMeshStage final : public LeaderStage {
 public:
  explicit LeadersMeshStage(GlooCommunicator& comm) : comm_(comm) {}

  void allreduce(const char* op, const void* in, void* out, size_t count, DataType type,
                 ReduceOp reduce) override {
    comm_.allreduceOnMesh(op, *comm_.leaders_, in, out, count, type, reduce);
  }
  void broadcast(const char* op, const void* in, void* out, size_t count, DataType type,
                 int rootNode) override {
    comm_.guarded(op, [&] { comm_.leaders_->broadcast(in, out, count, type, rootNode); });
  }
  void allgatherv(const char* op, const void* in, void* out, const std::vector<size_t>& counts,
                  DataType type) override {
    comm_.guarded(op, [&] { comm_.leaders_->allgatherv(in, out, counts, type); });
  }
  void alltoallv(const char* op, const void* in, void* out, const std::vector<size_t>& counts,
                 DataType type) override {
    comm_.guarded(op, [&] { comm_.leaders_->alltoallv(in, out, counts, counts, type); });
  }
  void barrier(const char* op) override {
    comm_.guarded(op, [&] { comm_.leaders_->barrier(); });
  }

 private:
  GlooCommunicator& comm_;
};

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
  if (node_) nodeStage_ = std::make_unique<NodeMemoryStage>(*this);
  if (leaders_) leaderStage_ = std::make_unique<LeadersMeshStage>(*this);
  hierarchy_ = std::make_unique<Hierarchy>(layout_, nodeStage_.get(), leaderStage_.get());
  attachMessages(fmt::format("{}/shm/node/{}/messages", prefix_, layout_.node()), layout_.leader(),
                 node_.get(), "shared-memory send and recv within this node, they use TCP");
  onNodeRanksAttached(node_.get());
}

}  // namespace distrun::comm
