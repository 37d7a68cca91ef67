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
  std::vector<int> gpus;  // device indices, as CUDA/ROCR_VISIBLE_DEVICES take them
  std::vector<int> numa;
};

// What a job asks of each node, in Slurm's words.
struct PlanRequest {
  int ranksPerNode = 1;  // --nproc-per-node (--ntasks-per-node)
  int cpusPerRank = 0;   // --cpus-per-task; 0: the rank's whole share
  int gpusPerNode = -1;  // --gpus-per-node; -1: every GPU the node has
};

// The binding of every local rank: one GPU (or an even share of the GPUs)
// per rank in device order, and the usable cores closest to it; ranks that
// share a GPU split its cores; without GPUs the usable cores are split
// evenly in order. With cpusPerRank, each rank keeps the first that many of
// its share. This is LUMI's "linear assignment of GCD, then match the
// cores" and MareNostrum 5's "20 cores per GPU on the GPU's socket".
// UsageError naming the flag when the node cannot hold the request.
std::vector<RankBinding> planBinding(const NodeTopology& node, const PlanRequest& request);

// The GPUs of local rank `rank` of `ranks` as planBinding gives them with
// every GPU of the node, whatever cores this process may use: what
// `distrun exec --gpu-bind closest` sets. Empty on a GPU-less node;
// UsageError when the ranks cannot share the GPUs evenly.
std::vector<int> rankGpus(const NodeTopology& node, int rank, int ranks);

// `cpus` split into `parts` contiguous shares, the first ones one core
// larger when they do not divide evenly. Empty when parts exceed cpus.
std::vector<CpuList> splitEvenly(const CpuList& cpus, int parts);

// srun's --cpu-bind value for the plan: "mask_cpu:0xfe,0xfe00,...", local
// rank order.
std::string srunCpuBind(const std::vector<RankBinding>& plan);

// The plan as a table, one line per rank of every node in `hosts` (rank =
// node index * ranks per node + local rank): rank, node, cores, mask, GPU,
// NUMA. What `--explain` prints.
std::string formatPlanTable(const std::vector<RankBinding>& plan,
                            const std::vector<std::string>& hosts);

}  // namespace distrun::binding
