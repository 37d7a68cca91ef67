#include "distrun/cluster/leftovers.h"

#include <algorithm>

#include <fmt/format.h>

#include "distrun/common/strings.h"

namespace distrun::cluster {

namespace {

std::string fingerprint(const std::string& name, const std::string& value) {
  return fmt::format("{:08x}", fnv1a(name + "=" + value) & 0xffffffffu);
}

// The variables distrun reads to tell which task this is, by launcher
// (job_layout.cc, slurm_layout.cc, mpi_layout.cc, pbs_layout.cc).
const std::vector<std::string>& placementVariables() {
  static const std::vector<std::string> names = {
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
      "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "DISTRUN_STORE",
      "DISTRUN_TOKEN",
      // Slurm
      "SLURM_JOB_ID", "SLURM_JOBID", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_PROCID",
      "SLURM_NODEID", "SLURM_LOCALID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS",
      "SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_STEP_TASKS_PER_NODE",
      "SLURM_TASKS_PER_NODE", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST",
      "SLURMD_NODENAME", "SLURM_CPUS_PER_TASK",
      // Open MPI, MPICH/Hydra
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
      "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_orte_num_nodes", "OMPI_MCA_ess_base_jobid",
      "PMIX_NAMESPACE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
      "PMI_JOBID", "PMI_KVSNAME",
      // PBS
      "PBS_JOBID", "PBS_VNODENUM", "PBS_NODEFILE"};
  return names;
}

}  // namespace

std::string envMarker(const std::vector<std::pair<std::string, std::string>>& exported) {
  std::vector<std::string> entries;
  for (const auto& [name, value] : exported) {
    entries.push_back(name + ":" + fingerprint(name, value));
  }
  return join(entries, ",");
}

std::vector<std::string> leftoverVariables(const Environment& env) {
  std::vector<std::string> names;
  for (const std::string& entry : split(env.getOr(kEnvMarker, ""), ',')) {
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0) continue;
    const std::string name = entry.substr(0, colon);
    std::optional<std::string> value = env.get(name);
    if (value && fingerprint(name, *value) == entry.substr(colon + 1)) names.push_back(name);
  }
  return names;
}

MapEnvironment withoutLeftovers(const Environment& env) {
  MapEnvironment clean(env.all());
  for (const std::string& name : leftoverVariables(env)) clean.unset(name);
  clean.unset(kEnvMarker);
  return clean;
}

std::string leftoversNote(const std::vector<std::string>& names) {
  return fmt::format(
      "ignoring {}: left by an earlier eval \"$(distrun env)\" ({} lists them with these values)",
      join(names, " "), kEnvMarker);
}

std::vector<std::string> placementVariablesSet(const Environment& env) {
  std::vector<std::string> names;
  auto add = [&names](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const std::string& name : placementVariables()) {
    if (env.has(name)) add(name);
  }
  for (const std::string& name : leftoverVariables(env)) add(name);
  if (env.has(kEnvMarker)) add(kEnvMarker);
  return names;
}

}  // namespace distrun::cluster
