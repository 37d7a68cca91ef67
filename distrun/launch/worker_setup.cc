#include "distrun/launch/worker_setup.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "distrun/cluster/rank_env.h"

namespace distrun::launch {

namespace {

std::vector<int> cpuShare(const AgentConfig& config, int localRank) {
  return splitCpus(config.cpus, config.layout.localWorldSize).at(static_cast<size_t>(localRank));
}

cluster::RankEnvironmentOptions rankOptions(const AgentConfig& config, const rdzv::World& world,
                                            int storePort, int localRank) {
  cluster::RankEnvironmentOptions o;
  o.site = config.site;
  o.restartCount = world.round;
  o.maxRestarts = config.maxRestarts;
  o.masterAddr = world.masterAddr;
  o.masterPort = world.masterPort;
  o.runId = config.runId;
  o.roleName = config.role;
  o.usableCpus = static_cast<int>(config.cpus.size());
  o.launcherVariables = {{"DISTRUN_STORE", fmt::format("{}:{}", config.storeHost, storePort)},
                         {"DISTRUN_TOKEN", config.token},
                         {"DISTRUN_RUN_ID", config.runId}};
  if (!config.logDir.empty()) {
    o.launcherVariables.push_back(
        {"TORCHELASTIC_ERROR_FILE",
         workerLogFolder(config, world.round, localRank) + "/error.json"});
  }
  return o;
}

cluster::RankEnvironment workerRankEnvironment(const AgentConfig& config, const rdzv::World& world,
                                               int storePort, int localRank,
                                               const Environment& env) {
  int cpus = std::max(static_cast<int>(cpuShare(config, localRank).size()), 1);
  cluster::JobLayout layout = workerLayout(config.layout, world, localRank, cpus);
  return cluster::buildRankEnvironment(layout, env,
                                       rankOptions(config, world, storePort, localRank));
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

}  // namespace

std::vector<std::vector<int>> splitCpus(const std::vector<int>& cpus, int workers) {
  std::vector<std::vector<int>> shares(static_cast<size_t>(std::max(workers, 0)));
  if (workers <= 0 || static_cast<int>(cpus.size()) < workers) return shares;
  size_t each = cpus.size() / static_cast<size_t>(workers);
  size_t extra = cpus.size() % static_cast<size_t>(workers);
  size_t next = 0;
  for (size_t w = 0; w < shares.size(); ++w) {
    size_t count = each + (w < extra ? 1 : 0);
    shares[w].assign(cpus.begin() + static_cast<long>(next),
                     cpus.begin() + static_cast<long>(next + count));
    next += count;
  }
  return shares;
}

std::string workerLogFolder(const AgentConfig& config, int round, int localRank) {
  return fmt::format("{}/{}/attempt_{}/{}", config.logDir, config.runId, round, localRank);
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
  std::vector<int> cpus = config.bindCpus ? cpuShare(config, localRank) : std::vector<int>{};
  return WorkerSpec{config.program, environmentStrings(rank, env), std::move(cpus)};
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
                                    config.role, config.host);
  return std::make_unique<WorkerOutput>(prefix, route, workerLogFolder(config, round, localRank));
}

}  // namespace distrun::launch
