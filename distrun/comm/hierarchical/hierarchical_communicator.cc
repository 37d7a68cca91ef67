#include "distrun/comm/hierarchical/hierarchical_communicator.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "distrun/common/error.h"

namespace distrun::comm {

namespace {

std::string partRanks(const std::vector<int>& ranks) {
  std::vector<int> own(ranks.size());
  for (size_t i = 0; i < own.size(); ++i) own[i] = static_cast<int>(i);
  return fmt::format("whose ranks {} are world ranks {}", fmt::join(own, ", "),
                     fmt::join(ranks, ", "));
}

std::string describe(const Communicator& comm) {
  const std::string transport = comm.transport();
  return transport.empty() ? std::string(comm.backend())
                           : fmt::format("{} ({})", comm.backend(), transport);
}

// The parts, checked against the layout.
HierarchicalParts checked(const NodeLayout& layout, HierarchicalParts parts) {
  auto expect = [](bool ok, std::string_view what) {
    if (!ok) throw UsageError(fmt::format("hierarchical communicator: {}", what));
  };
  const int rank = layout.neighbours().at(static_cast<size_t>(layout.localRank()));
  expect(parts.world && parts.world->rank() == rank &&
             static_cast<size_t>(parts.world->size()) == layout.ranks(),
         fmt::format("the world part must be rank {} of {}", rank, layout.ranks()));
  const int local = static_cast<int>(layout.neighbours().size());
  expect(
      local == 1
          ? !parts.node
          : parts.node && parts.node->rank() == layout.localRank() && parts.node->size() == local,
      local == 1 ? std::string("a rank alone on its node has no node part")
                 : fmt::format("the node part must be rank {} of {}", layout.localRank(), local));
  expect(layout.isLeader() ? parts.leaders && parts.leaders->rank() == layout.node() &&
                                 parts.leaders->size() == layout.nodes()
                           : !parts.leaders,
         layout.isLeader()
             ? fmt::format("the leaders' part must be rank {} of {}", layout.node(), layout.nodes())
             : std::string("a rank that is not its node's leader has no leaders' part"));
  return parts;
}

}  // namespace

void inPart(std::string_view what, const std::vector<int>& ranks,
            const std::function<void()>& call) {
  try {
    call();
  } catch (const TimeoutError& e) {
    throw TimeoutError(fmt::format("{}, {}: {}", what, partRanks(ranks), e.what()));
  } catch (const CommunicationError& e) {
    throw CommunicationError(fmt::format("{}, {}: {}", what, partRanks(ranks), e.what()));
  }
}

// This node's communicator, its ranks named as the world's in an error.
class HierarchicalCommunicator::NodePart final : public NodeStage {
 public:
  NodePart(Communicator& comm, const NodeLayout& layout)
      : comm_(comm),
        what_(fmt::format("within node {}", layout.node())),
        ranks_(layout.neighbours()) {}

  void allreduce(const char*, const void* in, void* out, size_t count, DataType type,
                 ReduceOp reduce) override {
    inPart(what_, ranks_, [&] { comm_.allreduce(in, out, count, type, reduce); });
  }
  void broadcast(const char*, const void* in, void* out, size_t count, DataType type,
                 int localRoot) override {
    inPart(what_, ranks_, [&] { comm_.broadcast(in, out, count, type, localRoot); });
  }
  void allgather(const char*, const void* in, void* out, size_t count, DataType type) override {
    inPart(what_, ranks_, [&] { comm_.allgather(in, out, count, type); });
  }
  void barrier(const char*) override {
    inPart(what_, ranks_, [&] { comm_.barrier(); });
  }

 private:
  Communicator& comm_;
  std::string what_;
  std::vector<int> ranks_;
};

// The leaders' communicator; the nodes' blocks of unequal size go padded
// to the largest node's.
class HierarchicalCommunicator::LeadersPart final : public LeaderStage {
 public:
  LeadersPart(Communicator& comm, const NodeLayout& layout)
      : comm_(comm), layout_(layout), ranks_(layout.leaders()) {
    for (int n = 0; n < layout.nodes(); ++n) {
      largestNode_ = std::max(largestNode_, layout.ranksOf(n).size());
    }
  }

  void allreduce(const char*, const void* in, void* out, size_t count, DataType type,
                 ReduceOp reduce) override {
    inPart(kWhat, ranks_, [&] { comm_.allreduce(in, out, count, type, reduce); });
  }
  void broadcast(const char*, const void* in, void* out, size_t count, DataType type,
                 int rootNode) override {
    inPart(kWhat, ranks_, [&] { comm_.broadcast(in, out, count, type, rootNode); });
  }
  void allgatherv(const char*, const void* in, void* out, const std::vector<size_t>& counts,
                  DataType type) override;
  void alltoallv(const char*, const void* in, void* out, const std::vector<size_t>& counts,
                 DataType type) override;
  void barrier(const char*) override {
    inPart(kWhat, ranks_, [&] { comm_.barrier(); });
  }

 private:
  static constexpr std::string_view kWhat = "among the nodes' leaders";

  Communicator& comm_;
  NodeLayout layout_;
  std::vector<int> ranks_;
  size_t largestNode_ = 0;
  std::vector<char> sending_;
  std::vector<char> receiving_;
};

void HierarchicalCommunicator::LeadersPart::allgatherv(const char*, const void* in, void* out,
                                                       const std::vector<size_t>& counts,
                                                       DataType type) {
  const size_t widest = *std::max_element(counts.begin(), counts.end());
  if (std::all_of(counts.begin(), counts.end(), [&](size_t c) { return c == widest; })) {
    inPart(kWhat, ranks_, [&] { comm_.allgather(in, out, widest, type); });
    return;
  }
  const size_t element = sizeOf(type);
  sending_.assign(widest * element, 0);
  std::memcpy(sending_.data(), in, counts[static_cast<size_t>(comm_.rank())] * element);
  receiving_.resize(widest * element * counts.size());
  inPart(kWhat, ranks_, [&] { comm_.allgather(sending_.data(), receiving_.data(), widest, type); });
  char* next = static_cast<char*>(out);
  for (size_t n = 0; n < counts.size(); ++n) {
    std::memcpy(next, receiving_.data() + n * widest * element, counts[n] * element);
    next += counts[n] * element;
  }
}

void HierarchicalCommunicator::LeadersPart::alltoallv(const char*, const void* in, void* out,
                                                      const std::vector<size_t>& counts,
                                                      DataType type) {
  // Node m gives node n a block of `count` from each of its ranks for each
  // of n's: the largest exchange, padded to, is the largest node's with
  // itself, the same for every leader.
  const size_t local = layout_.neighbours().size();
  const size_t count = counts[0] / (local * layout_.ranksOf(0).size());
  const size_t widest = count * largestNode_ * largestNode_;
  const size_t element = sizeOf(type);
  sending_.assign(widest * element * counts.size(), 0);
  receiving_.resize(widest * element * counts.size());
  const char* from = static_cast<const char*>(in);
  for (size_t n = 0; n < counts.size(); ++n) {
    std::memcpy(sending_.data() + n * widest * element, from, counts[n] * element);
    from += counts[n] * element;
  }
  inPart(kWhat, ranks_, [&] { comm_.alltoall(sending_.data(), receiving_.data(), widest, type); });
  char* to = static_cast<char*>(out);
  for (size_t n = 0; n < counts.size(); ++n) {
    std::memcpy(to, receiving_.data() + n * widest * element, counts[n] * element);
    to += counts[n] * element;
  }
}

HierarchicalCommunicator::HierarchicalCommunicator(NodeLayout layout, HierarchicalParts parts,
                                                   HierarchicalOptions options)
    : Communicator(layout.neighbours().at(static_cast<size_t>(layout.localRank())),
                   static_cast<int>(layout.ranks())),
      parts_(checked(layout, std::move(parts))),
      options_(options),
      nodeStage_(parts_.node ? std::make_unique<NodePart>(*parts_.node, layout) : nullptr),
      leaderStage_(parts_.leaders ? std::make_unique<LeadersPart>(*parts_.leaders, layout)
                                  : nullptr),
      hierarchy_(std::move(layout), nodeStage_.get(), leaderStage_.get()) {}

HierarchicalCommunicator::~HierarchicalCommunicator() { shutdown(); }

std::string HierarchicalCommunicator::transport() const {
  const Communicator& between = parts_.leaders ? *parts_.leaders : *parts_.world;
  return fmt::format("{} within each of {} nodes, {} between them",
                     parts_.node ? describe(*parts_.node) : std::string("one rank"),
                     hierarchy_.layout().nodes(), describe(between));
}

void HierarchicalCommunicator::doAllreduce(const void* in, void* out, size_t count, DataType type,
                                           ReduceOp op) {
  noteAlgorithm("hierarchical");
  hierarchy_.allreduce("allreduce", in, out, count, type, op);
}

void HierarchicalCommunicator::doBroadcast(const void* in, void* out, size_t count, DataType type,
                                           int root) {
  noteAlgorithm("hierarchical");
  hierarchy_.broadcast(in, out, count, type, root);
}

void HierarchicalCommunicator::doAllgather(const void* in, void* out, size_t count, DataType type) {
  if (count * sizeOf(type) * static_cast<size_t>(size()) >= options_.allgatherBelowBytes) {
    parts_.world->allgather(in, out, count, type);
    return;
  }
  noteAlgorithm("hierarchical");
  hierarchy_.allgather(in, out, count, type);
}

// An allreduce of every block that keeps this rank's.
void HierarchicalCommunicator::doReduceScatter(const void* in, void* out, size_t count,
                                               DataType type, ReduceOp op) {
  const size_t block = count * sizeOf(type);
  std::vector<char> reduced(block * static_cast<size_t>(size()));
  noteAlgorithm("hierarchical");
  hierarchy_.allreduce("reduce_scatter", in, reduced.data(), count * static_cast<size_t>(size()),
                       type, op);
  std::memcpy(out, reduced.data() + block * static_cast<size_t>(rank()), block);
}

void HierarchicalCommunicator::doAlltoall(const void* in, void* out, size_t count, DataType type) {
  if (count * sizeOf(type) * static_cast<size_t>(size()) >= options_.alltoallBelowBytes) {
    parts_.world->alltoall(in, out, count, type);
    return;
  }
  noteAlgorithm("hierarchical");
  hierarchy_.alltoall(in, out, count, type);
}

void HierarchicalCommunicator::doSend(const void* data, size_t count, DataType type, int peer,
                                      int tag) {
  parts_.world->send(data, count, type, peer, tag);
}

void HierarchicalCommunicator::doRecv(void* data, size_t count, DataType type, int peer, int tag) {
  parts_.world->recv(data, count, type, peer, tag);
}

void HierarchicalCommunicator::doSendRecv(const void* sendData, int sendPeer, void* recvData,
                                          int recvPeer, size_t count, DataType type, int tag) {
  parts_.world->sendRecv(sendData, sendPeer, recvData, recvPeer, count, type, tag);
}

void HierarchicalCommunicator::doBarrier() {
  noteAlgorithm("hierarchical");
  hierarchy_.barrier();
}

}  // namespace distrun::comm
