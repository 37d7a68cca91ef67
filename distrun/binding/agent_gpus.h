#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distrun/binding/node_topology.h"
#include "distrun/common/environment.h"

namespace distrun::binding {

// The GPU ids this process may use and the variable that says so: the first
// of CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and
// SLURM_STEP_GPUS that is set and not empty. Empty when none is.
std::pair<std::vector<std::string>, std::string> readVisibleDevices(const Environment& env);

// The GPUs an agent (or one `distrun exec` task) was given, in the order its
// processes number them: an inherited CUDA_VISIBLE_DEVICES,
// ROCR_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES (readVisibleDevices), else
// every GPU of the node (SLURM_STEP_GPUS alone narrows nothing a process
// sees, so it does not count here).
struct AgentGpus {
  // The variable they came from, which the workers' narrowing or reordering
  // sets; `fallbackVariable` when nothing was inherited.
  std::string variable;
  bool inherited = false;
  // The list as that variable spells it (indices, UUIDs, MIG names); the
  // node's indices when nothing was inherited.
  std::vector<std::string> ids;
  // `node` with only these GPUs, in this order. When the ids cannot be
  // placed on the node (UUIDs with no SLURM_STEP_GPUS/SLURM_JOB_GPUS beside
  // them), one GPU per id with an even share of the node's usable cores,
  // `node.source` saying so.
  NodeTopology node;
};

// ConfigError naming the variable when an inherited index is not one of the
// node's GPUs ("CUDA_VISIBLE_DEVICES=5: the node has GPUs 0-3 (from ...)").
// Indices are placed through SLURM_STEP_GPUS (else SLURM_JOB_GPUS) when
// that lists as many: under Slurm's device cgroup CUDA_VISIBLE_DEVICES=0
// may be the node's GPU 3.
AgentGpus agentGpus(const NodeTopology& node, const Environment& env,
                    const std::string& fallbackVariable = "CUDA_VISIBLE_DEVICES");

// What one worker is shown of its agent's GPUs, so that device `LOCAL_RANK`
// of its list is its plan's GPU (`device`, a position in `ids`):
//   - the plan's GPU is already at LOCAL_RANK: the list as inherited;
//   - elsewhere (map:LIST): the list with the two positions swapped;
//   - the ranks outnumber the GPUs (LOCAL_RANK past the list's end): the
//     list as inherited, the plan's GPU in DISTRUN_LOCAL_DEVICE only;
//   - `virtualLocalRank` (torchrun 2.x's --virtual-local-rank): only the
//     plan's GPU, as device 0, and LOCAL_RANK=0.
struct WorkerGpus {
  std::optional<std::string> visible;  // the variable's new value; nullopt: unchanged
  std::optional<int> localRank;        // LOCAL_RANK's new value; nullopt: unchanged
  int localDevice = -1;                // DISTRUN_LOCAL_DEVICE; -1: no GPU
};
WorkerGpus workerGpus(const std::vector<std::string>& ids, int device, int localRank,
                      bool virtualLocalRank);

}  // namespace distrun::binding
