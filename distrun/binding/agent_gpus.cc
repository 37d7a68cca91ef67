#include "distrun/binding/agent_gpus.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "distrun/binding/binding_plan.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::binding {
namespace {

constexpr const char* kSlurmGpuLists[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"};

std::optional<std::vector<int>> indices(const std::vector<std::string>& ids) {
  std::vector<int> out;
  for (const std::string& id : ids) {
    const std::string_view digits = trim(id);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return std::nullopt;
    }
    out.push_back(static_cast<int>(parseCount(digits, "a GPU index")));
  }
  return out;
}

// The node's indices behind `ids`: Slurm's list of the job's GPUs when it
// names as many (the ids are then renumbered by the device cgroup), else
// the ids themselves when they are indices. nullopt for UUIDs.
std::optional<std::vector<int>> nodeIndices(const std::vector<std::string>& ids,
                                            const Environment& env) {
  for (const char* name : kSlurmGpuLists) {
    std::optional<std::vector<int>> slurm = indices(split(env.getOr(name, ""), ','));
    if (slurm && slurm->size() == ids.size()) return slurm;
  }
  return indices(ids);
}

const NodeTopology::Gpu& gpuOf(const NodeTopology& node, int index, const std::string& given) {
  auto found = std::find_if(node.gpus.begin(), node.gpus.end(),
                            [&](const NodeTopology::Gpu& g) { return g.index == index; });
  if (found != node.gpus.end()) return *found;
  throw ConfigError(fmt::format("{}: GPU {} is not one of the node's {} GPUs (0-{}, from {})",
                                given, index, node.gpus.size(), node.gpus.size() - 1, node.source));
}

// One GPU per id, each with an even share of the usable cores: where they
// are on the node is unknown.
std::vector<NodeTopology::Gpu> unplacedGpus(const NodeTopology& node, size_t count) {
  std::vector<CpuList> shares = splitEvenly(node.usableCpus(), static_cast<int>(count));
  std::vector<NodeTopology::Gpu> gpus;
  for (size_t i = 0; i < count; ++i) {
    CpuList cpus = shares.empty() ? node.usableCpus() : shares[i];
    std::vector<int> numa = node.numaOf(cpus);
    gpus.push_back({-1, numa.empty() ? 0 : numa.front(), cpus});
  }
  return gpus;
}

NodeTopology onlyGiven(const NodeTopology& node, const AgentGpus& gpus, const Environment& env) {
  const std::string given = fmt::format("{}={}", gpus.variable, fmt::join(gpus.ids, ","));
  NodeTopology narrowed = node;
  narrowed.gpus.clear();
  std::optional<std::vector<int>> placed = nodeIndices(gpus.ids, env);
  if (!placed) {
    narrowed.gpus = unplacedGpus(node, gpus.ids.size());
    narrowed.source = fmt::format("{}; {} (ids the node's GPUs do not name: cores shared evenly)",
                                  node.source, given);
    return narrowed;
  }
  for (int index : *placed) narrowed.gpus.push_back(gpuOf(node, index, given));
  narrowed.source = fmt::format("{}; {}", node.source, given);
  return narrowed;
}

}  // namespace

std::pair<std::vector<std::string>, std::string> readVisibleDevices(const Environment& env) {
  for (const char* name :
       {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "SLURM_STEP_GPUS"}) {
    std::optional<std::string> value = env.get(name);
    if (value && !value->empty()) return {split(*value, ','), name};
  }
  return {};
}

AgentGpus agentGpus(const NodeTopology& node, const Environment& env,
                    const std::string& fallbackVariable) {
  AgentGpus gpus;
  gpus.node = node;
  auto [ids, variable] = readVisibleDevices(env);
  gpus.inherited = !ids.empty() && variable != "SLURM_STEP_GPUS";
  if (!gpus.inherited) {
    gpus.variable = fallbackVariable;
    for (const NodeTopology::Gpu& g : node.gpus) gpus.ids.push_back(std::to_string(g.index));
    return gpus;
  }
  gpus.variable = variable;
  gpus.ids = ids;
  if (!node.gpus.empty()) gpus.node = onlyGiven(node, gpus, env);
  return gpus;
}

WorkerGpus workerGpus(const std::vector<std::string>& ids, int device, int localRank,
                      bool virtualLocalRank) {
  WorkerGpus w;
  if (device < 0 || static_cast<size_t>(device) >= ids.size()) return w;
  if (virtualLocalRank) {
    w.visible = ids[static_cast<size_t>(device)];
    w.localRank = 0;
    w.localDevice = 0;
    return w;
  }
  if (device == localRank || static_cast<size_t>(localRank) >= ids.size()) {
    w.localDevice = device;
    return w;
  }
  std::vector<std::string> swapped = ids;
  std::swap(swapped[static_cast<size_t>(device)], swapped[static_cast<size_t>(localRank)]);
  w.visible = fmt::format("{}", fmt::join(swapped, ","));
  w.localDevice = localRank;
  return w;
}

}  // namespace distrun::binding
