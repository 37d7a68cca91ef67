#include "distrun/trace_merge/collective_index.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

namespace distrun::trace_merge {

namespace {

bool has(const std::vector<bool>& bits, int rank) {
  return rank >= 0 && static_cast<size_t>(rank) < bits.size() && bits[static_cast<size_t>(rank)];
}

void set(std::vector<bool>& bits, int rank) {
  if (bits.size() <= static_cast<size_t>(rank)) bits.resize(static_cast<size_t>(rank) + 1);
  bits[static_cast<size_t>(rank)] = true;
}

}  // namespace

size_t CollectiveKeyHash::operator()(const CollectiveKey& k) const {
  const size_t a = std::hash<int64_t>()(k.comm);
  const size_t b = std::hash<int64_t>()(k.seq);
  const size_t c = std::hash<int>()(k.round);
  return a ^ (b * 0x9e3779b97f4a7c15ULL) ^ (c * 0xc2b2ae3d27d4eb4fULL);
}

void CollectiveIndex::add(const CollectiveKey& key, int rank) {
  auto [it, inserted] = collectives_.try_emplace(key);
  if (inserted) it->second.number = collectives_.size() - 1;
  set(it->second.recorded, rank);
}

FlowCounts CollectiveIndex::count(const std::map<int, std::set<int>>& ranksByRound, int maxRank) {
  stride_ = static_cast<uint64_t>(std::max(maxRank, 0)) + 1;
  FlowCounts counts;
  for (const auto& [key, ranks] : collectives_) {
    const uint64_t others =
        static_cast<uint64_t>(std::count(ranks.recorded.begin(), ranks.recorded.end(), true)) -
        (has(ranks.recorded, 0) ? 1 : 0);
    if (!has(ranks.recorded, 0)) {
      counts.missing += others;
      continue;
    }
    counts.pairs += others;
    // A rank records collectives only in rounds it has a part of.
    auto round = ranksByRound.find(key.round);
    if (round == ranksByRound.end()) continue;
    const uint64_t expected = round->second.size() - (round->second.contains(0) ? 1 : 0);
    counts.missing += expected > others ? expected - others : 0;
  }
  return counts;
}

std::vector<FlowEnd> CollectiveIndex::flowsFor(const CollectiveKey& key, int rank) {
  auto it = collectives_.find(key);
  if (it == collectives_.end() || has(it->second.linked, rank)) return {};
  Ranks& ranks = it->second;
  set(ranks.linked, rank);
  if (!has(ranks.recorded, 0)) return {};
  const uint64_t base = ranks.number * stride_;
  if (rank != 0) return {FlowEnd{base + static_cast<uint64_t>(rank), false}};
  std::vector<FlowEnd> starts;
  for (size_t r = 1; r < ranks.recorded.size(); ++r) {
    if (ranks.recorded[r]) starts.push_back(FlowEnd{base + r, true});
  }
  return starts;
}

std::string flowName(const CollectiveKey& key) {
  if (key.comm == kTorchComm) return fmt::format("torch #{}", key.seq);
  if (key.round == 0) return fmt::format("comm {} #{}", key.comm, key.seq);
  return fmt::format("comm {} #{} (restart {})", key.comm, key.seq, key.round);
}

}  // namespace distrun::trace_merge
