#pragma once
// For tests: the variables Slurm gives one task of a job step.
#include <map>
#include <string>

namespace distrun::cluster::testing {

using Vars = std::map<std::string, std::string>;

// The variables srun sets for task `rank` (on node `node`, local id `local`)
// of a step: a copy of what a real `srun -N4 -n7` printed (tasks 2,2,2,1 on
// gpu-[07-09],cpu01, job 4242, step 3), with the task's own ids.
inline Vars slurmStep(int rank, int node, int local) {
  return {{"SLURM_JOB_ID", "4242"},
          {"SLURM_STEP_ID", "3"},
          {"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NODEID", std::to_string(node)},
          {"SLURM_LOCALID", std::to_string(local)},
          {"SLURM_STEP_NUM_TASKS", "7"},
          {"SLURM_STEP_NUM_NODES", "4"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"},
          {"SLURM_STEP_NODELIST", "gpu-[07-09],cpu01"},
          {"SLURM_JOB_NODELIST", "gpu-[01-09],cpu01"},
          {"SLURM_TASKS_PER_NODE", "1(x10)"},
          {"SLURM_NTASKS", "7"},
          {"SLURM_NNODES", "4"}};
}

}  // namespace distrun::cluster::testing
