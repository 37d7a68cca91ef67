#pragma once

#include <optional>
#include <string>
#include <vector>

#include "distrun/binding/binding_plan.h"

namespace distrun::binding {

// `--cpu-bind`: where each local rank's threads may run (docs/launcher.md).
//   none      no affinity: the agent's whole set
//   cores     the plan's cores (planBinding on this node), the default
//   numa      every allowed core of the plan's NUMA domain(s)
//   site      the plan from the site profile's `node` lines
//   mask:LIST Slurm-style hex masks, one per local rank ("mask:0x1,0x2")
struct CpuBind {
  enum class Mode { kNone, kCores, kNuma, kSite, kMask };
  Mode mode = Mode::kCores;
  std::vector<CpuList> masks;  // kMask: one per local rank
};

// `--gpu-bind`: which of the agent's GPUs is each local rank's (cuda:N of
// the list every worker sees; agent_gpus.h). No mode narrows what a worker
// sees: that is --virtual-local-rank's.
//   closest   the plan's: GPU r for local rank r, cores near it (the default)
//   none      no GPU in the plan: cores only, DISTRUN_LOCAL_DEVICE unset
//   map:LIST  each local rank's position in the agent's GPUs ("map:3,2,1,0");
//             its list is reordered so that this GPU is cuda:LOCAL_RANK
struct GpuBind {
  enum class Mode { kNone, kClosest, kMap };
  Mode mode = Mode::kClosest;
  std::vector<int> map;  // kMap: one per local rank
};

// The flags' values parsed. UsageError naming the flag, the value and the
// forms expected (bad hex, an empty list, an unknown mode).
CpuBind parseCpuBind(const std::string& value);
GpuBind parseGpuBind(const std::string& value);

// Checks a mask:LIST or map:LIST against the node: one entry per local rank
// (`ranks`), masks within `allowed` (the CPUs the agent may use). UsageError
// naming the flag otherwise. Nothing to check for the other modes.
void checkCpuBind(const CpuBind& bind, int ranks, const CpuList& allowed);
void checkGpuBindCount(const GpuBind& bind, int ranks);

// Local rank `localRank`'s entry of a map:LIST (bind.map, one per rank): a
// position among node.gpus, the GPUs of the `holder` ("agent", or an exec
// "task"). UsageError naming the flag on a node without GPUs or for a
// position past its GPUs.
int mappedDevice(const GpuBind& bind, const NodeTopology& node, int localRank,
                 const std::string& holder);

// What a node's ranks get, local rank order: cpus empty means no affinity,
// gpus empty means no visibility variable set.
struct BindRequest {
  int ranks = 1;
  CpuList allowed;  // the agent's affinity (usableCpus())
  CpuBind cpu;
  std::optional<GpuBind> gpu;          // nullopt: closest where the node has GPUs
  const NodeTopology* site = nullptr;  // the site profile's node, when it has one
  std::string siteName;                // for the error when `site` mode has none
};

// The plan applied (docs/launcher.md, "Binding"). `node` is this node's
// topology (sysfs, hwloc or DISTRUN_NODE_TOPOLOGY) with only the agent's
// GPUs, in the agent's order (AgentGpus::node). Without GPUs in use, the
// cores plan is splitEvenly(allowed), and no affinity when the ranks
// outnumber the allowed CPUs. UsageError naming the flag when the request
// cannot be met (site without `node` lines, map on a GPU-less node, a GPU
// index the node lacks, ranks that cannot share the GPUs evenly).
std::vector<RankBinding> bindRanks(const NodeTopology& node, const BindRequest& request);

// `node` with only the CPUs in `allowed`: its cores, NUMA domains and GPUs'
// closest cores narrowed to them.
NodeTopology restrictTo(const NodeTopology& node, const CpuList& allowed);

}  // namespace distrun::binding
