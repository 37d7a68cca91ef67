#include "distrun/cluster/job_layout.h"

#include <fmt/format.h>

#include "distrun/cluster/hostlist.h"
#include "distrun/cluster/leftovers.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::cluster {

std::string schedulerName(Scheduler scheduler) {
  switch (scheduler) {
    case Scheduler::kStandalone:
      return "standalone";
    case Scheduler::kSlurm:
      return "slurm";
    case Scheduler::kOpenMpi:
      return "openmpi";
    case Scheduler::kMpich:
      return "mpich";
    case Scheduler::kPbs:
      return "pbs";
  }
  return "unknown";
}

std::string defaultRunId(const JobLayout& layout) {
  if (layout.jobId.empty()) return "none";
  if (layout.stepId.empty()) return layout.jobId;
  return layout.jobId + "." + layout.stepId;
}

namespace detail {

std::optional<int> readInt(const Environment& env, const std::string& name) {
  std::optional<std::string> value = env.get(name);
  if (!value) return std::nullopt;
  return static_cast<int>(parseCount(*value, name));
}

int requireInt(const Environment& env, const std::string& name) {
  std::optional<int> value = readInt(env, name);
  if (!value) {
    throw ConfigError(fmt::format("{} is not set", name));
  }
  return *value;
}

int requireWith(const Environment& env, const std::string& name, const std::string& setName) {
  std::optional<int> value = readInt(env, name);
  if (!value) {
    throw ConfigError(
        fmt::format("{}={} is set but {} is not", setName, env.getOr(setName, ""), name));
  }
  return *value;
}

std::optional<std::string> firstOf(const Environment& env, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (auto value = env.get(name)) return value;
  }
  return std::nullopt;
}

void readVisibleDevices(const Environment& env, JobLayout& layout) {
  std::tie(layout.visibleDevices, layout.visibleDevicesVariable) = cluster::readVisibleDevices(env);
}

void checkBelow(int value, const std::string& valueName, int bound, const std::string& boundName) {
  if (value < 0 || value >= bound) {
    throw ConfigError(fmt::format("{}={} contradicts {}={}: expected {} < {}", valueName, value,
                                  boundName, bound, valueName, boundName));
  }
}

std::vector<std::string> hostsOf(const std::string& name, const std::string& list) {
  try {
    return expandHostlist(list);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", name, e.what()));
  }
}

std::vector<std::string> allocationHosts(const Environment& env) {
  for (const char* name : {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (auto list = env.get(name)) return hostsOf(name, *list);
  }
  if (auto nodefile = env.get("PBS_NODEFILE")) {
    std::vector<std::string> hosts;
    for (const std::string& line : split(readTextFile(*nodefile, "PBS_NODEFILE"), '\n')) {
      std::string host(trim(line));
      if (!host.empty() && (hosts.empty() || hosts.back() != host)) {
        hosts.push_back(host);
      }
    }
    return hosts;
  }
  return {};
}

}  // namespace detail

JobLayout detectStandalone(const Environment& env, const HostFacts& host) {
  JobLayout layout;
  layout.scheduler = Scheduler::kStandalone;
  layout.hosts = {host.hostname};
  layout.masterHost = "127.0.0.1";
  // A world described by hand (RANK and WORLD_SIZE set, as torchrun's
  // workers or a user's own script would) is taken as given.
  if (env.has("RANK") || env.has("WORLD_SIZE")) {
    layout.worldSize = detail::requireWith(env, "WORLD_SIZE", "RANK");
    layout.rank = detail::requireWith(env, "RANK", "WORLD_SIZE");
    detail::checkBelow(layout.rank, "RANK", layout.worldSize, "WORLD_SIZE");
    layout.localWorldSize = detail::readInt(env, "LOCAL_WORLD_SIZE").value_or(layout.worldSize);
    layout.localRank = detail::readInt(env, "LOCAL_RANK").value_or(layout.rank);
    detail::checkBelow(layout.localRank, "LOCAL_RANK", layout.localWorldSize, "LOCAL_WORLD_SIZE");
    layout.nodeRank = detail::readInt(env, "GROUP_RANK").value_or(0);
    layout.numNodes = detail::readInt(env, "GROUP_WORLD_SIZE").value_or(1);
    detail::checkBelow(layout.nodeRank, "GROUP_RANK", layout.numNodes, "GROUP_WORLD_SIZE");
  }
  detail::readVisibleDevices(env, layout);
  return layout;
}

namespace {

JobLayout innermostLayout(const Environment& env, const HostFacts& host) {
  if (auto layout = detectOpenMpi(env, host)) return *layout;
  std::optional<JobLayout> slurm = detectSlurm(env, host);
  std::optional<JobLayout> mpich = detectMpich(env, host);
  // srun --mpi=pmi2 sets PMI_RANK too; when it agrees with SLURM_PROCID the
  // Slurm view is the richer one. When it does not, an MPI launcher runs
  // inside the step (mpiexec.hydra under salloc) and PMI is the truth.
  if (slurm && mpich && (slurm->rank != mpich->rank || slurm->worldSize != mpich->worldSize)) {
    return *mpich;
  }
  if (slurm) return *slurm;
  if (mpich) return *mpich;
  if (auto layout = detectPbs(env, host)) return *layout;
  return detectStandalone(env, host);
}

}  // namespace

JobLayout detectJobLayout(const Environment& env, const HostFacts& host) {
  try {
    return innermostLayout(env, host);
  } catch (const ConfigError& e) {
    throw ConfigError(e.what() + std::string(kClearStaleHint));
  }
}

}  // namespace distrun::cluster
