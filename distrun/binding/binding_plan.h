#pragma once

#include <string>
#include <vector>

#include "distrun/binding/node_topology.h"

namespace distrun::binding {

// Where one rank of a node runs: its cores, the GPUs it sees and the NUMA
// domains they belong to.
struct RankBinding {
  int localRank = 0;
  CpuList cpus;
  std::vector<int> gpus;  // the node's GPU indices (NodeTopology::Gpu::index)
  std::vector<int> numa;
  // The GPU's position in the agent's GPUs (the list its workers see):
  // cuda:device. -1 without a GPU. When ranks do not outnumber the GPUs it is
  // the local rank, as torchrun's `cuda:LOCAL_RANK` expects.
  int device = -1;
};

// What a job asks of each node, in Slurm's words.
struct PlanRequest {
  int ranksPerNode = 1;  // --nproc-per-node (--ntasks-per-node)
  int cpusPerRank = 0;   // --cpus-per-task; 0: the rank's whole share
  int gpusPerNode = -1;  // --gpus-per-node; -1: every GPU the node has
};

// The binding of every local rank: GPU r for local rank r (torchrun's
// cuda:LOCAL_RANK), and the usable cores closest to it; when the ranks
// outnumber the GPUs, ranks / GPUs neighbouring ranks share each GPU and
// split its cores; without GPUs the usable cores are split
// evenly in order. With cpusPerRank, each rank keeps the first that many of
// its share. This is LUMI's "linear assignment of GCD, then match the
// cores" and MareNostrum 5's "20 cores per GPU on the GPU's socket".
// UsageError naming the flag when the node cannot hold the request.
std::vector<RankBinding> planBinding(const NodeTopology& node, const PlanRequest& request);

// The position among node.gpus of local rank `rank` of `ranks`'s GPU as
// planBinding gives it, whatever cores this process may use: what
// `distrun exec --gpu-bind closest` uses. -1 on a GPU-less node; UsageError
// when the ranks cannot share the GPUs evenly.
int rankDevice(const NodeTopology& node, int rank, int ranks);

// `cpus` split into `parts` contiguous shares, the first ones one core
// larger when they do not divide evenly. Empty when parts exceed cpus.
std::vector<CpuList> splitEvenly(const CpuList& cpus, int parts);

// srun's --cpu-bind value for the plan: "mask_cpu:0xfe,0xfe00,...", local
// rank order.
std::string srunCpuBind(const std::vector<RankBinding>& plan);

// The plan as a table, one line per rank of every node in `hosts` (rank =
// node index * ranks per node + local rank): rank, node, cores, mask, GPU
// (the node's index), device (cuda:N, its position in the agent's GPUs),
// NUMA. What `--explain` prints.
std::string formatPlanTable(const std::vector<RankBinding>& plan,
                            const std::vector<std::string>& hosts);

}  // namespace distrun::binding
