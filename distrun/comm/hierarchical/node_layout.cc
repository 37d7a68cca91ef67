#include "distrun/comm/hierarchical/node_layout.h"

#include <map>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::comm {

NodeLayout::NodeLayout(const std::vector<std::string>& nodeOfRank, int rank) {
  std::map<std::string, int> numbered;
  for (size_t r = 0; r < nodeOfRank.size(); ++r) {
    const auto [at, added] = numbered.emplace(nodeOfRank[r], static_cast<int>(leaders_.size()));
    if (added) {
      leaders_.push_back(static_cast<int>(r));
      ranksOfNode_.emplace_back();
    }
    std::vector<int>& ranks = ranksOfNode_[static_cast<size_t>(at->second)];
    nodeOfRank_.push_back(at->second);
    localRankOf_.push_back(static_cast<int>(ranks.size()));
    ranks.push_back(static_cast<int>(r));
  }
  node_ = nodeOf(rank);
  localRank_ = localRankOf(rank);
}

bool NodeLayout::spansNodesWithNeighbours() const {
  if (nodes() < 2) return false;
  for (int r : localRankOf_) {
    if (r > 0) return true;
  }
  return false;
}

NodeLayout NodeLayout::exchange(rdzv::Store& store, const std::string& prefix, int rank, int size,
                                const std::string& node, std::chrono::milliseconds timeout) {
  // One round trip: this rank's name, then every rank's once it is there.
  rdzv::StoreBatch batch;
  batch.set(fmt::format("{}/node/{}", prefix, rank), node);
  for (int r = 0; r < size; ++r) batch.get(fmt::format("{}/node/{}", prefix, r));
  const std::vector<std::optional<std::string>> replies = store.run(batch, timeout);
  if (replies.size() < batch.size()) {
    // The replies a timed-out batch returns need not reach the silent
    // rank's key (the store may send them together): ask key by key.
    int silent = 0;
    while (silent < size && store.tryGet(fmt::format("{}/node/{}", prefix, silent))) ++silent;
    throw TimeoutError(
        fmt::format("communicator: rank {} did not say which node it is on within {} s", silent,
                    std::chrono::duration<double>(timeout).count()));
  }
  std::vector<std::string> names;
  for (size_t r = 1; r < replies.size(); ++r) names.push_back(replies[r].value_or(""));
  return NodeLayout(names, rank);
}

}  // namespace distrun::comm
