#include "distrun/binding/binding_plan.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "distrun/common/error.h"

namespace distrun::binding {
namespace {

std::vector<NodeTopology::Gpu> requestedGpus(const NodeTopology& node, const PlanRequest& r) {
  int have = static_cast<int>(node.gpus.size());
  if (r.gpusPerNode > have) {
    throw UsageError(fmt::format("--gpus-per-node {}: the node has {} GPU{} (from {})",
                                 r.gpusPerNode, have, have == 1 ? "" : "s", node.source));
  }
  int used = r.gpusPerNode < 0 ? have : r.gpusPerNode;
  return {node.gpus.begin(), node.gpus.begin() + used};
}

// Ranks and GPUs pair up when one count divides the other.
void checkRanksShareGpus(int ranks, int gpus) {
  if (ranks % gpus == 0 || gpus % ranks == 0) return;
  throw UsageError(fmt::format(
      "--nproc-per-node {} cannot share {} GPUs evenly: use a divisor or a multiple of {}", ranks,
      gpus, gpus));
}

// The positions in `gpus` of local rank `rank`'s GPUs: an even share of
// them, or one shared with ranks / gpus other ranks.
std::vector<size_t> gpuShare(size_t gpus, int rank, int ranks) {
  int gpusEach = std::max(1, static_cast<int>(gpus) / ranks);
  int ranksEach = std::max(1, ranks / static_cast<int>(gpus));
  std::vector<size_t> share;
  for (int g = rank / ranksEach * gpusEach; static_cast<int>(share.size()) < gpusEach; ++g) {
    share.push_back(static_cast<size_t>(g));
  }
  return share;
}

RankBinding bindingOnGpus(const NodeTopology& node, const std::vector<NodeTopology::Gpu>& gpus,
                          int rank, int ranks) {
  int ranksEach = std::max(1, ranks / static_cast<int>(gpus.size()));
  RankBinding b;
  b.localRank = rank;
  CpuList closest;
  for (size_t g : gpuShare(gpus.size(), rank, ranks)) {
    b.gpus.push_back(gpus[g].index);
    closest.insert(closest.end(), gpus[g].cpus.begin(), gpus[g].cpus.end());
  }
  std::sort(closest.begin(), closest.end());
  std::vector<CpuList> shares = splitEvenly(without(closest, node.reserved), ranksEach);
  if (!shares.empty()) b.cpus = shares[static_cast<size_t>(rank % ranksEach)];
  return b;
}

void keepFirstCpus(std::vector<RankBinding>& plan, int cpusPerRank, const NodeTopology& node) {
  if (cpusPerRank <= 0) return;
  for (RankBinding& b : plan) {
    if (static_cast<int>(b.cpus.size()) < cpusPerRank) {
      throw UsageError(fmt::format(
          "--cpus-per-task {}: local rank {} has {} usable core{} ({}) of the node's {} (from {})",
          cpusPerRank, b.localRank, b.cpus.size(), b.cpus.size() == 1 ? "" : "s",
          formatCpuList(b.cpus), node.usableCpus().size(), node.source));
    }
    b.cpus.resize(static_cast<size_t>(cpusPerRank));
  }
}

}  // namespace

std::vector<CpuList> splitEvenly(const CpuList& cpus, int parts) {
  std::vector<CpuList> shares;
  if (parts <= 0 || static_cast<int>(cpus.size()) < parts) return shares;
  size_t each = cpus.size() / static_cast<size_t>(parts);
  size_t extra = cpus.size() % static_cast<size_t>(parts);
  size_t next = 0;
  for (size_t p = 0; p < static_cast<size_t>(parts); ++p) {
    size_t count = each + (p < extra ? 1 : 0);
    shares.emplace_back(cpus.begin() + static_cast<long>(next),
                        cpus.begin() + static_cast<long>(next + count));
    next += count;
  }
  return shares;
}

std::vector<int> rankGpus(const NodeTopology& node, int rank, int ranks) {
  std::vector<int> indices;
  if (node.gpus.empty()) return indices;
  checkRanksShareGpus(ranks, static_cast<int>(node.gpus.size()));
  for (size_t g : gpuShare(node.gpus.size(), rank, ranks)) indices.push_back(node.gpus[g].index);
  return indices;
}

std::vector<RankBinding> planBinding(const NodeTopology& node, const PlanRequest& request) {
  int ranks = request.ranksPerNode;
  std::vector<NodeTopology::Gpu> gpus = requestedGpus(node, request);
  std::vector<RankBinding> plan;
  if (!gpus.empty()) {
    checkRanksShareGpus(ranks, static_cast<int>(gpus.size()));
    for (int r = 0; r < ranks; ++r) plan.push_back(bindingOnGpus(node, gpus, r, ranks));
  } else {
    std::vector<CpuList> shares = splitEvenly(node.usableCpus(), ranks);
    for (int r = 0; r < ranks && !shares.empty(); ++r) {
      plan.push_back(RankBinding{r, shares[static_cast<size_t>(r)], {}, {}});
    }
  }
  bool coreForEach = plan.size() == static_cast<size_t>(ranks) &&
                     std::none_of(plan.begin(), plan.end(), [](auto& b) { return b.cpus.empty(); });
  if (!coreForEach) {
    throw UsageError(
        fmt::format("--nproc-per-node {}: more ranks than the {} usable cores{} (from {})", ranks,
                    node.usableCpus().size(), gpus.empty() ? "" : " near its GPUs", node.source));
  }
  keepFirstCpus(plan, request.cpusPerRank, node);
  for (RankBinding& b : plan) b.numa = node.numaOf(b.cpus);
  return plan;
}

std::string srunCpuBind(const std::vector<RankBinding>& plan) {
  std::vector<std::string> masks;
  for (const RankBinding& b : plan) masks.push_back(cpuMask(b.cpus));
  return fmt::format("mask_cpu:{}", fmt::join(masks, ","));
}

std::string formatPlanTable(const std::vector<RankBinding>& plan,
                            const std::vector<std::string>& hosts) {
  std::string out = fmt::format("{:<6} {:<12} {:<16} {:<20} {:<5} {}\n", "rank", "node", "cores",
                                "mask", "gpu", "numa");
  for (size_t n = 0; n < hosts.size(); ++n) {
    for (const RankBinding& b : plan) {
      std::string gpus = b.gpus.empty() ? "-" : fmt::format("{}", fmt::join(b.gpus, ","));
      out += fmt::format("{:<6} {:<12} {:<16} {:<20} {:<5} {}\n",
                         n * plan.size() + static_cast<size_t>(b.localRank), hosts[n],
                         formatCpuList(b.cpus), cpuMask(b.cpus), gpus, fmt::join(b.numa, ","));
    }
  }
  return out;
}

}  // namespace distrun::binding
