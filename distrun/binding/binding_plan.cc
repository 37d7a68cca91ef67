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

// Each rank has a GPU of its own, or the GPUs are shared by as many ranks each.
void checkRanksShareGpus(int ranks, int gpus) {
  if (ranks <= gpus || ranks % gpus == 0) return;
  throw UsageError(fmt::format(
      "--nproc-per-node {} cannot share {} GPUs evenly: use at most {} or a multiple of {}", ranks,
      gpus, gpus, gpus));
}

// The position in the GPUs of local rank `rank`'s GPU: its own when the
// GPUs are as many as the ranks or more, else one shared with ranks / gpus
// neighbouring ranks.
size_t gpuPosition(size_t gpus, int rank, int ranks) {
  int ranksEach = std::max(1, ranks / static_cast<int>(gpus));
  return static_cast<size_t>(rank / ranksEach);
}

// The cores of GPU `position`, and when the GPUs outnumber the ranks those of
// the GPUs no rank's LOCAL_RANK names, dealt out in turn: one rank on a node
// of 8 GPUs keeps the whole node.
CpuList coresOf(const std::vector<NodeTopology::Gpu>& gpus, size_t position, int ranks) {
  CpuList cores = gpus[position].cpus;
  for (size_t g = static_cast<size_t>(ranks); g < gpus.size(); ++g) {
    if (g % static_cast<size_t>(ranks) != position) continue;
    cores.insert(cores.end(), gpus[g].cpus.begin(), gpus[g].cpus.end());
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

RankBinding bindingOnGpus(const NodeTopology& node, const std::vector<NodeTopology::Gpu>& gpus,
                          int rank, int ranks) {
  int ranksEach = std::max(1, ranks / static_cast<int>(gpus.size()));
  size_t position = gpuPosition(gpus.size(), rank, ranks);
  RankBinding b;
  b.localRank = rank;
  b.gpus = {gpus[position].index};
  b.device = static_cast<int>(position);
  std::vector<CpuList> shares =
      splitEvenly(without(coresOf(gpus, position, ranks), node.reserved), ranksEach);
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

int rankDevice(const NodeTopology& node, int rank, int ranks) {
  if (node.gpus.empty()) return -1;
  checkRanksShareGpus(ranks, static_cast<int>(node.gpus.size()));
  return static_cast<int>(gpuPosition(node.gpus.size(), rank, ranks));
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
  constexpr std::string_view kRow = "{:<6} {:<12} {:<16} {:<20} {:<5} {:<7} {}\n";
  std::string out = fmt::format(kRow, "rank", "node", "cores", "mask", "gpu", "device", "numa");
  for (size_t n = 0; n < hosts.size(); ++n) {
    for (const RankBinding& b : plan) {
      std::string gpus = b.gpus.empty() ? "-" : fmt::format("{}", fmt::join(b.gpus, ","));
      std::string device = b.device < 0 ? "-" : fmt::format("cuda:{}", b.device);
      // No cores: the worker is not bound (more ranks than cores), it
      // inherits the agent's affinity; no mask of 0x0 says otherwise.
      std::string cores = b.cpus.empty() ? "any" : formatCpuList(b.cpus);
      std::string mask = b.cpus.empty() ? "- (not bound)" : cpuMask(b.cpus);
      std::string numa = b.numa.empty() ? "-" : fmt::format("{}", fmt::join(b.numa, ","));
      out += fmt::format(kRow, n * plan.size() + static_cast<size_t>(b.localRank), hosts[n], cores,
                         mask, gpus, device, numa);
    }
  }
  return out;
}

}  // namespace distrun::binding
