// MPI launchers: Open MPI's mpirun and MPICH's Hydra (mpiexec).
#include <algorithm>

#include <fmt/format.h>

#include "distrun/cluster/job_layout.h"
#include "distrun/common/error.h"

namespace distrun::cluster {

namespace {

using detail::checkBelow;
using detail::readInt;

// The variable names one MPI launcher uses for the same four facts.
struct MpiVariables {
  Scheduler scheduler;
  const char* rank;
  const char* size;
  const char* localRank;
  const char* localSize;
  const char* numNodes;  // may be nullptr: the launcher does not say
  std::vector<std::string> jobId;
};

const MpiVariables kOpenMpi{Scheduler::kOpenMpi,
                            "OMPI_COMM_WORLD_RANK",
                            "OMPI_COMM_WORLD_SIZE",
                            "OMPI_COMM_WORLD_LOCAL_RANK",
                            "OMPI_COMM_WORLD_LOCAL_SIZE",
                            "OMPI_MCA_orte_num_nodes",
                            {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}};

const MpiVariables kMpich{Scheduler::kMpich,           "PMI_RANK",        "PMI_SIZE",
                          "MPI_LOCALRANKID",           "MPI_LOCALNRANKS", nullptr,
                          {"PMI_JOBID", "PMI_KVSNAME"}};

// The node count when the launcher does not say: one node when every task
// is local, else tasks / local tasks, which holds for the launchers' default
// by-slot placement with equal counts per node.
int guessNodes(const JobLayout& layout) {
  if (layout.localWorldSize == layout.worldSize) return 1;
  // Rounded up without overflow: a world of INT_MAX tasks is valid input.
  return layout.worldSize / layout.localWorldSize +
         (layout.worldSize % layout.localWorldSize != 0 ? 1 : 0);
}

// Where the node count came from, for a message.
std::string nodeCountSource(const JobLayout& layout, const MpiVariables& vars, bool told) {
  if (told) return fmt::format("{}={}", vars.numNodes, layout.numNodes);
  return fmt::format("{}={} over {}={}", vars.size, layout.worldSize, vars.localSize,
                     layout.localWorldSize);
}

// Which node this is, and which host runs rank 0. Single-node worlds use
// loopback. Across nodes the enclosing allocation (Slurm, PBS) names the
// hosts; without one only the user can say where rank 0 runs.
void placeOnNodes(const Environment& env, const HostFacts& host, const std::string& nodesSource,
                  JobLayout& layout) {
  if (layout.numNodes == 1) {
    layout.hosts = {host.hostname};
    layout.masterHost = "127.0.0.1";
    return;
  }
  layout.hosts = detail::allocationHosts(env);
  auto self = std::find(layout.hosts.begin(), layout.hosts.end(), host.hostname);
  if (self != layout.hosts.end()) {
    layout.nodeRank = static_cast<int>(self - layout.hosts.begin());
  } else {
    layout.nodeRank = layout.rank / std::max(layout.localWorldSize, 1);
    layout.notes.push_back("GROUP_RANK assumes the MPI launcher's default by-slot placement");
  }
  layout.nodeRank = std::min(layout.nodeRank, layout.numNodes - 1);
  if (!layout.hosts.empty()) {
    layout.masterHost = layout.hosts.front();
  } else if (!env.has("MASTER_ADDR")) {
    throw ConfigError(
        fmt::format("{} job spans {} nodes ({}) and no allocation (SLURM_JOB_NODELIST, "
                    "PBS_NODEFILE) says which host runs rank 0: set MASTER_ADDR "
                    "(mpirun -x MASTER_ADDR=HOST)",
                    schedulerName(layout.scheduler), layout.numNodes, nodesSource));
  }
}

std::optional<JobLayout> detectMpi(const Environment& env, const HostFacts& host,
                                   const MpiVariables& vars) {
  if (!env.has(vars.rank)) return std::nullopt;
  JobLayout layout;
  layout.scheduler = vars.scheduler;
  layout.rank = detail::requireInt(env, vars.rank);
  layout.worldSize = detail::requireWith(env, vars.size, vars.rank);
  checkBelow(layout.rank, vars.rank, layout.worldSize, vars.size);
  layout.localWorldSize = readInt(env, vars.localSize).value_or(1);
  layout.localRank = readInt(env, vars.localRank).value_or(0);
  checkBelow(layout.localRank, vars.localRank, layout.localWorldSize, vars.localSize);
  if (layout.localWorldSize > layout.worldSize) {
    throw ConfigError(fmt::format("{}={} contradicts {}={}: expected {} <= {}", vars.localSize,
                                  layout.localWorldSize, vars.size, layout.worldSize,
                                  vars.localSize, vars.size));
  }
  std::optional<int> nodes = vars.numNodes ? readInt(env, vars.numNodes) : std::nullopt;
  layout.numNodes = nodes.value_or(guessNodes(layout));
  for (const std::string& name : vars.jobId) {
    if (auto id = env.get(name)) {
      layout.jobId = *id;
      break;
    }
  }
  placeOnNodes(env, host, nodeCountSource(layout, vars, nodes.has_value()), layout);
  detail::readVisibleDevices(env, layout);
  return layout;
}

}  // namespace

std::optional<JobLayout> detectOpenMpi(const Environment& env, const HostFacts& host) {
  return detectMpi(env, host, kOpenMpi);
}

std::optional<JobLayout> detectMpich(const Environment& env, const HostFacts& host) {
  return detectMpi(env, host, kMpich);
}

}  // namespace distrun::cluster
