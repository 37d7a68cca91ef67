#include "distrun/launch/worker_setup.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "distrun/cluster/rank_env.h"
#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/launch/worker.h"

namespace distrun::launch {

namespace {

// An even share of the agent's CPUs: empty when the workers outnumber them.
binding::CpuList evenShare(const AgentConfig& config, int localRank) {
  std::vector<binding::CpuList> shares =
      binding::splitEvenly(config.cpus, config.layout.localWorldSize);
  return shares.empty() ? binding::CpuList{} : shares.at(static_cast<size_t>(localRank));
}

binding::RankBinding rankBinding(const AgentConfig& config, int localRank) {
  if (static_cast<size_t>(localRank) < config.plan.size()) {
    return config.plan[static_cast<size_t>(localRank)];
  }
  return binding::RankBinding{localRank, evenShare(config, localRank), {}, {}};
}

// The threads a worker may run: its bound cores, else its even share.
int workerCpus(const AgentConfig& config, int localRank) {
  binding::CpuList bound = rankBinding(config, localRank).cpus;
  size_t count = bound.empty() ? evenShare(config, localRank).size() : bound.size();
  return std::max(static_cast<int>(count), 1);
}

cluster::RankEnvironmentOptions rankOptions(const AgentConfig& config, const rdzv::World& world,
                                            int storePort, int localRank) {
  cluster::RankEnvironmentOptions o;
  o.site = config.site;
  o.restartCount = world.restarts;
  o.maxRestarts = config.maxRestarts;
  o.masterAddr = world.masterAddr;
  o.masterPort = world.masterPort;
  o.runId = config.runId;
  o.roleName = config.role;
  o.usableCpus = static_cast<int>(config.cpus.size());
  o.launcherVariables = {{"DISTRUN_STORE", fmt::format("{}:{}", config.storeHost, storePort)},
                         {"DISTRUN_TOKEN", config.token},
                         {"DISTRUN_RUN_ID", config.runId},
                         {"DISTRUN_PROGRESS_FD", std::to_string(kProgressFd)},
                         {"TORCHELASTIC_SIGNALS_TO_HANDLE", config.signalsToHandle}};
  if (!config.errorRoot.empty()) {
    o.launcherVariables.push_back(
        {"TORCHELASTIC_ERROR_FILE", workerErrorFile(config, world.round, localRank)});
  }
  return o;
}

void setVariable(cluster::RankEnvironment& rank, const std::string& name,
                 const std::string& value) {
  for (cluster::RankVariable& v : rank.variables) {
    if (v.name == name) {
      v.value = value;
      return;
    }
  }
  cluster::RankVariable added;
  added.name = name;
  added.value = value;
  rank.variables.push_back(added);
}

// The worker's GPU (the plan's device) as cuda:LOCAL_RANK of the agent's
// list (workerGpus): the list reordered or narrowed only when it must be.
void addVisibleGpus(const AgentConfig& config, int localRank, cluster::RankEnvironment& rank) {
  binding::WorkerGpus gpus = binding::workerGpus(
      config.gpuIds, rankBinding(config, localRank).device, localRank, config.virtualLocalRank);
  if (gpus.localDevice < 0) return;
  if (gpus.visible) setVariable(rank, config.gpuVisibilityVariable, *gpus.visible);
  if (gpus.localRank) setVariable(rank, "LOCAL_RANK", std::to_string(*gpus.localRank));
  setVariable(rank, "DISTRUN_LOCAL_DEVICE", std::to_string(gpus.localDevice));
}

cluster::RankEnvironment workerRankEnvironment(const AgentConfig& config, const rdzv::World& world,
                                               int storePort, int localRank,
                                               const Environment& env) {
  cluster::JobLayout layout =
      workerLayout(config.layout, world, localRank, workerCpus(config, localRank));
  cluster::RankEnvironment rank =
      cluster::buildRankEnvironment(layout, env, rankOptions(config, world, storePort, localRank));
  addVisibleGpus(config, localRank, rank);
  // The agent's counts, never what the agent inherited (torchrun's).
  setVariable(rank, "TORCHELASTIC_RESTART_COUNT", std::to_string(world.restarts));
  setVariable(rank, "TORCHELASTIC_MAX_RESTARTS", std::to_string(config.maxRestarts));
  return rank;
}

// `env` overlaid with `rank`'s variables, as "NAME=value".
std::vector<std::string> environmentStrings(const cluster::RankEnvironment& rank,
                                            const Environment& env) {
  std::map<std::string, std::string> vars = env.all();
  for (const cluster::RankVariable& v : rank.variables) vars[v.name] = v.value;
  std::vector<std::string> out;
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

// The error file's folder made, and no error of an earlier run with the
// same folder and run id left in it.
void freshErrorFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path file(path);
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) {
    throw IoError(
        fmt::format("TORCHELASTIC_ERROR_FILE {}: cannot make its folder: {}", path, ec.message()));
  }
  std::filesystem::remove(file, ec);
}

}  // namespace

std::string attemptFolder(const std::string& root, const AgentConfig& config, int round) {
  return fmt::format("{}/{}/attempt_{}", root, config.runId, round);
}

std::string workerLogFolder(const AgentConfig& config, int round, int localRank) {
  return fmt::format("{}/{}", attemptFolder(config.logDir, config, round), localRank);
}

std::string workerErrorFile(const AgentConfig& config, int round, int localRank) {
  if (config.errorRoot.empty()) return "";
  return fmt::format("{}/{}/error.json", attemptFolder(config.errorRoot, config, round), localRank);
}

std::string privateRunFolder(const Environment& env) {
  std::string path = userFolder(env) + "/run-XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) throw SystemError("mkdtemp", path, errno);
  return path;
}

int workerRank(const rdzv::World& world, int localRank) { return world.firstRank + localRank; }

cluster::JobLayout workerLayout(const cluster::JobLayout& node, const rdzv::World& world,
                                int localRank, int cpus) {
  cluster::JobLayout worker = node;
  worker.rank = workerRank(world, localRank);
  worker.worldSize = world.worldSize;
  worker.localRank = localRank;
  worker.numNodes = world.numNodes;
  worker.masterHost = world.masterAddr;
  worker.cpusPerTask = cpus;
  return worker;
}

std::vector<std::string> workerEnvironment(const AgentConfig& config, const rdzv::World& world,
                                           int storePort, int localRank, const Environment& env) {
  return environmentStrings(workerRankEnvironment(config, world, storePort, localRank, env), env);
}

WorkerSpec workerSpec(const AgentConfig& config, const rdzv::World& world, int storePort,
                      int localRank, const Environment& env) {
  const cluster::RankEnvironment rank =
      workerRankEnvironment(config, world, storePort, localRank, env);
  cluster::makeNodeDirs(rank);
  const std::string errorFile = workerErrorFile(config, world.round, localRank);
  if (!errorFile.empty()) freshErrorFile(errorFile);
  return WorkerSpec{config.program, environmentStrings(rank, env),
                    rankBinding(config, localRank).cpus, errorFile};
}

std::unique_ptr<WorkerOutput> workerOutput(const AgentConfig& config, int round, int rank,
                                           int localRank) {
  int redirect = streamBits(config.redirects, localRank);
  int tee = streamBits(config.tee, localRank);
  bool files = !config.logDir.empty();
  bool shown = !config.consoleRanks || config.consoleRanks->count(localRank);
  StreamRoute route;
  route.stdoutToFile = files || ((redirect | tee) & 1);
  route.stderrToFile = files || ((redirect | tee) & 2);
  route.stdoutToConsole = shown && !(redirect & 1);
  route.stderrToConsole = shown && !(redirect & 2);
  std::string prefix = expandPrefix(config.logPrefix, config.layout.nodeRank, rank, localRank,
                                    config.role, config.nodeName);
  return std::make_unique<WorkerOutput>(prefix, route, workerLogFolder(config, round, localRank));
}

}  // namespace distrun::launch
