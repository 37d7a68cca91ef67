#include "distrun/binding/bind_flags.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::binding {
namespace {

constexpr const char* kCpuForms =
    "expected none, cores, numa, site or mask:LIST (hex masks, one per local rank: mask:0x1,0x2)";
constexpr const char* kGpuForms =
    "expected closest, none or map:LIST (a GPU index per local rank: map:0,1)";

// "0xfe" (or "fe") -> {1,...,7}; nullopt when it is not hex or names no CPU.
std::optional<CpuList> parseHexMask(std::string_view text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    text.remove_prefix(2);
  if (text.empty()) return std::nullopt;
  CpuList cpus;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[text.size() - 1 - i])));
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    int nibble = c <= '9' ? c - '0' : c - 'a' + 10;
    for (int bit = 0; bit < 4; ++bit) {
      if (nibble & (1 << bit)) cpus.push_back(static_cast<int>(i) * 4 + bit);
    }
  }
  if (cpus.empty()) return std::nullopt;
  return cpus;
}

std::vector<std::string> listAfter(const std::string& value, const std::string& prefix) {
  if (value.size() <= prefix.size()) return {};
  return split(value.substr(prefix.size()), ',');
}

bool hasGpus(const NodeTopology& node, const BindRequest& r) {
  if (r.gpu) return r.gpu->mode == GpuBind::Mode::kClosest && !node.gpus.empty();
  return !node.gpus.empty();
}

// The plan without GPUs: the allowed CPUs split evenly (no binding when
// the ranks outnumber them), as distrun run always did.
std::vector<RankBinding> evenPlan(const NodeTopology& node, const BindRequest& r) {
  std::vector<CpuList> shares = splitEvenly(r.allowed, r.ranks);
  std::vector<RankBinding> plan;
  for (int rank = 0; rank < r.ranks; ++rank) {
    RankBinding b{rank, {}, {}, {}};
    if (!shares.empty()) b.cpus = shares[static_cast<size_t>(rank)];
    b.numa = node.numaOf(b.cpus);
    plan.push_back(b);
  }
  return plan;
}

// The even plan, each rank still given GPU LOCAL_RANK (or its share) where
// the cores near the GPUs cannot hold the ranks (an affinity narrower than
// the GPUs' cores): cuda:LOCAL_RANK stays the plan's GPU.
std::vector<RankBinding> evenPlanWithGpus(const NodeTopology& node, const BindRequest& r) {
  std::vector<RankBinding> plan = evenPlan(node, r);
  try {
    for (RankBinding& b : plan) {
      b.device = rankDevice(node, b.localRank, r.ranks);
      b.gpus = {node.gpus[static_cast<size_t>(b.device)].index};
    }
  } catch (const UsageError&) {
    for (RankBinding& b : plan) {
      b.device = -1;
      b.gpus.clear();
    }
  }
  return plan;
}

std::vector<RankBinding> sitePlan(const BindRequest& r) {
  if (r.site == nullptr && r.siteName.empty()) {
    throw UsageError(
        "--cpu-bind site: no site profile applies here: choose one with --site NAME (its "
        "`node` lines describe the node)");
  }
  if (r.site == nullptr) {
    throw UsageError(fmt::format(
        "--cpu-bind site: the site profile {} has no `node` lines describing its nodes: add "
        "them (docs/sites.md) or use --cpu-bind cores",
        r.siteName));
  }
  std::vector<RankBinding> plan = planBinding(*r.site, PlanRequest{r.ranks, 0, -1});
  for (const RankBinding& b : plan) {
    if (onlyWithin(b.cpus, r.allowed) != b.cpus) {
      throw UsageError(fmt::format(
          "--cpu-bind site: local rank {} is planned on CPUs {} ({}) but this agent may use "
          "only {}: run on the site's nodes or use --cpu-bind cores",
          b.localRank, formatCpuList(b.cpus), r.site->source, formatCpuList(r.allowed)));
    }
  }
  return plan;
}

// --gpu-bind map:LIST: each rank's cores follow its mapped GPU, split
// evenly among the ranks mapped to the same GPU; the even plan's share
// where the GPU has no core this agent may use (an XML without locality).
std::vector<RankBinding> mappedPlan(const NodeTopology& node, const BindRequest& r) {
  NodeTopology narrowed = restrictTo(node, r.allowed);
  std::vector<RankBinding> plan = evenPlan(node, r);
  std::map<int, std::vector<int>> ranksOf;  // GPU position -> its ranks
  for (int rank = 0; rank < r.ranks; ++rank) {
    ranksOf[mappedDevice(*r.gpu, node, rank, "agent")].push_back(rank);
  }
  for (const auto& [gpu, ranks] : ranksOf) {
    CpuList near = onlyWithin(narrowed.gpus[static_cast<size_t>(gpu)].cpus, narrowed.usableCpus());
    std::vector<CpuList> shares = splitEvenly(near, static_cast<int>(ranks.size()));
    if (shares.empty()) continue;
    for (size_t i = 0; i < ranks.size(); ++i) {
      RankBinding& b = plan[static_cast<size_t>(ranks[i])];
      b.cpus = shares[i];
      b.numa = node.numaOf(b.cpus);
    }
  }
  return plan;
}

std::vector<RankBinding> cpuPlan(const NodeTopology& node, const BindRequest& r) {
  if (r.cpu.mode == CpuBind::Mode::kSite) return sitePlan(r);
  if (r.gpu && r.gpu->mode == GpuBind::Mode::kMap && !node.gpus.empty()) return mappedPlan(node, r);
  if (!hasGpus(node, r)) return evenPlan(node, r);
  NodeTopology narrowed = restrictTo(node, r.allowed);
  if (r.gpu) return planBinding(narrowed, PlanRequest{r.ranks, 0, -1});
  try {
    return planBinding(narrowed, PlanRequest{r.ranks, 0, -1});
  } catch (const UsageError&) {
    return evenPlanWithGpus(node, r);  // the defaults never refuse to start
  }
}

void applyCpuMode(std::vector<RankBinding>& plan, const NodeTopology& node, const BindRequest& r) {
  for (RankBinding& b : plan) {
    size_t rank = static_cast<size_t>(b.localRank);
    if (r.cpu.mode == CpuBind::Mode::kNone) b.cpus.clear();
    if (r.cpu.mode == CpuBind::Mode::kMask) b.cpus = r.cpu.masks[rank];
    if (r.cpu.mode == CpuBind::Mode::kNuma) {
      CpuList all;
      for (const NodeTopology::Numa& n : node.numaNodes) {
        if (std::count(b.numa.begin(), b.numa.end(), n.id)) {
          all.insert(all.end(), n.cpus.begin(), n.cpus.end());
        }
      }
      std::sort(all.begin(), all.end());
      b.cpus = onlyWithin(all, r.allowed);
    }
    if (r.cpu.mode == CpuBind::Mode::kMask || r.cpu.mode == CpuBind::Mode::kNone) {
      b.numa = node.numaOf(b.cpus);
    }
  }
}

void applyGpuMode(std::vector<RankBinding>& plan, const NodeTopology& node, const BindRequest& r) {
  if (!r.gpu || r.gpu->mode == GpuBind::Mode::kClosest) return;
  for (RankBinding& b : plan) {
    b.gpus.clear();
    b.device = -1;
  }
  if (r.gpu->mode == GpuBind::Mode::kNone) return;
  for (RankBinding& b : plan) {
    int gpu = mappedDevice(*r.gpu, node, b.localRank, "agent");
    b.gpus = {node.gpus[static_cast<size_t>(gpu)].index};
    b.device = gpu;
  }
}

}  // namespace

CpuBind parseCpuBind(const std::string& value) {
  if (value == "none") return {CpuBind::Mode::kNone, {}};
  if (value == "cores") return {CpuBind::Mode::kCores, {}};
  if (value == "numa") return {CpuBind::Mode::kNuma, {}};
  if (value == "site") return {CpuBind::Mode::kSite, {}};
  if (value.rfind("mask:", 0) == 0) {
    CpuBind bind{CpuBind::Mode::kMask, {}};
    for (const std::string& mask : listAfter(value, "mask:")) {
      std::optional<CpuList> cpus = parseHexMask(trim(mask));
      if (!cpus) {
        throw UsageError(
            fmt::format("--cpu-bind {}: '{}' is not a hexadecimal CPU mask naming a "
                        "CPU (0x1 is CPU 0, 0x6 CPUs 1-2)",
                        value, mask));
      }
      bind.masks.push_back(*cpus);
    }
    if (!bind.masks.empty()) return bind;
  }
  throw UsageError(fmt::format("--cpu-bind {}: {}", value, kCpuForms));
}

GpuBind parseGpuBind(const std::string& value) {
  if (value == "none") return {GpuBind::Mode::kNone, {}};
  if (value == "closest") return {GpuBind::Mode::kClosest, {}};
  if (value.rfind("map:", 0) == 0) {
    GpuBind bind{GpuBind::Mode::kMap, {}};
    for (const std::string& index : listAfter(value, "map:")) {
      try {
        bind.map.push_back(static_cast<int>(parseCount(std::string(trim(index)), "--gpu-bind")));
      } catch (const ConfigError&) {
        throw UsageError(
            fmt::format("--gpu-bind {}: '{}' is not a GPU index (0, 1, ...)", value, index));
      }
    }
    if (!bind.map.empty()) return bind;
  }
  throw UsageError(fmt::format("--gpu-bind {}: {}", value, kGpuForms));
}

void checkCpuBind(const CpuBind& bind, int ranks, const CpuList& allowed) {
  if (bind.mode != CpuBind::Mode::kMask) return;
  if (static_cast<int>(bind.masks.size()) != ranks) {
    throw UsageError(
        fmt::format("--cpu-bind mask:...: {} mask{} for --nproc-per-node {}: give "
                    "one mask per local rank",
                    bind.masks.size(), bind.masks.size() == 1 ? "" : "s", ranks));
  }
  for (size_t rank = 0; rank < bind.masks.size(); ++rank) {
    CpuList outside = without(bind.masks[rank], allowed);
    if (outside.empty()) continue;
    throw UsageError(fmt::format(
        "--cpu-bind mask:...: the mask {} of local rank {} names CPU{} {} this agent may not "
        "use (it may use {})",
        cpuMask(bind.masks[rank]), rank, outside.size() == 1 ? "" : "s", formatCpuList(outside),
        formatCpuList(allowed)));
  }
}

void checkGpuBindCount(const GpuBind& bind, int ranks) {
  if (bind.mode != GpuBind::Mode::kMap || static_cast<int>(bind.map.size()) == ranks) return;
  throw UsageError(
      fmt::format("--gpu-bind map:...: {} GPU index{} for --nproc-per-node {}: give "
                  "one per local rank",
                  bind.map.size(), bind.map.size() == 1 ? "" : "es", ranks));
}

int mappedDevice(const GpuBind& bind, const NodeTopology& node, int localRank,
                 const std::string& holder) {
  if (node.gpus.empty()) {
    throw UsageError(fmt::format(
        "--gpu-bind map:...: this node has no GPU (from {}): leave --gpu-bind out", node.source));
  }
  int gpu = bind.map.at(static_cast<size_t>(localRank));
  if (gpu >= static_cast<int>(node.gpus.size())) {
    throw UsageError(fmt::format(
        "--gpu-bind map:...: GPU {} for local rank {}, but the {} has {} (0-{}, from {})", gpu,
        localRank, holder, node.gpus.size(), node.gpus.size() - 1, node.source));
  }
  return gpu;
}

NodeTopology restrictTo(const NodeTopology& node, const CpuList& allowed) {
  NodeTopology narrowed = node;
  narrowed.cpus = onlyWithin(node.cpus, allowed);
  narrowed.reserved = onlyWithin(node.reserved, allowed);
  for (NodeTopology::Numa& n : narrowed.numaNodes) n.cpus = onlyWithin(n.cpus, allowed);
  for (NodeTopology::Gpu& g : narrowed.gpus) g.cpus = onlyWithin(g.cpus, allowed);
  return narrowed;
}

std::vector<RankBinding> bindRanks(const NodeTopology& node, const BindRequest& request) {
  checkCpuBind(request.cpu, request.ranks, request.allowed);
  if (request.gpu) checkGpuBindCount(*request.gpu, request.ranks);
  std::vector<RankBinding> plan = cpuPlan(node, request);
  const NodeTopology& planned = request.cpu.mode == CpuBind::Mode::kSite ? *request.site : node;
  applyCpuMode(plan, planned, request);
  applyGpuMode(plan, planned, request);
  return plan;
}

}  // namespace distrun::binding
