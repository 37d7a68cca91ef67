// Slurm: a task of a job step (srun) or the batch script of a job.
#include <numeric>

#include <fmt/format.h>

#include "distrun/cluster/job_layout.h"
#include "distrun/cluster/tasks_per_node.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::cluster {

namespace {

using detail::checkBelow;
using detail::firstOf;
using detail::readInt;
using detail::requireInt;

// A step variable, or its job-level twin when the step one is absent (an
// older Slurm, or srun --export=NONE). Returns the name actually used.
std::pair<std::string, std::string> stepOrJob(const Environment& env,
                                              const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (auto value = env.get(name)) return {name, *value};
  }
  throw ConfigError(fmt::format(
      "SLURM_PROCID and SLURM_STEP_ID say this is a task of a Slurm step but none of {} is set",
      join(names, ", ")));
}

// A count read by stepOrJob, with the name it was read from.
struct StepCount {
  std::string name;
  int value = 0;
};

StepCount stepInt(const Environment& env, const std::vector<std::string>& names) {
  auto [name, value] = stepOrJob(env, names);
  return {name, static_cast<int>(parseCount(value, name))};
}

// The variables the step's task and node counts were read from.
struct StepNames {
  std::string tasks;
  std::string nodes;
};

// The batch script, or an salloc shell: one process of an allocation, not
// a task of a parallel step.
JobLayout allocationShell(const Environment& env, const HostFacts& host, const std::string& jobId) {
  JobLayout layout;
  layout.scheduler = Scheduler::kSlurm;
  layout.jobId = jobId;
  layout.stepId = env.has("SLURM_PROCID") ? "batch" : "interactive";
  layout.hosts = {host.hostname};
  layout.masterHost = host.hostname;
  layout.cpusPerTask = readInt(env, "SLURM_CPUS_PER_TASK");
  layout.notes.push_back(
      "not inside a Slurm job step: this is a world of one process; start "
      "one task per rank with `srun distrun exec -- PROGRAM`");
  detail::readVisibleDevices(env, layout);
  return layout;
}

void checkHosts(const JobLayout& layout, const std::string& listName, const StepNames& names,
                const Environment& env) {
  if (static_cast<int>(layout.hosts.size()) != layout.numNodes) {
    throw ConfigError(fmt::format("{} names {} hosts but {}={}", listName, layout.hosts.size(),
                                  names.nodes, layout.numNodes));
  }
  std::optional<std::string> nodeName = env.get("SLURMD_NODENAME");
  if (nodeName && *nodeName != layout.hosts[layout.nodeRank]) {
    throw ConfigError(fmt::format(
        "SLURMD_NODENAME={} contradicts SLURM_NODEID={}: node {} of {} is {}", *nodeName,
        layout.nodeRank, layout.nodeRank, listName, layout.hosts[layout.nodeRank]));
  }
}

void checkTaskCounts(const JobLayout& layout, const std::vector<int>& perNode,
                     const std::string& perNodeName, const StepNames& names) {
  if (static_cast<int>(perNode.size()) != layout.numNodes) {
    throw ConfigError(fmt::format("{} lists {} nodes but {}={}", perNodeName, perNode.size(),
                                  names.nodes, layout.numNodes));
  }
  int total = std::accumulate(perNode.begin(), perNode.end(), 0);
  if (total != layout.worldSize) {
    throw ConfigError(fmt::format("{} adds up to {} tasks but {}={}", perNodeName, total,
                                  names.tasks, layout.worldSize));
  }
}

// This task's ids, checked against the step's counts.
StepNames readIds(const Environment& env, JobLayout& layout) {
  const StepCount tasks = stepInt(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"});
  const StepCount nodes =
      stepInt(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"});
  layout.worldSize = tasks.value;
  layout.numNodes = nodes.value;
  layout.rank = requireInt(env, "SLURM_PROCID");
  layout.nodeRank = detail::requireWith(env, "SLURM_NODEID", "SLURM_PROCID");
  layout.localRank = detail::requireWith(env, "SLURM_LOCALID", "SLURM_PROCID");
  checkBelow(layout.rank, "SLURM_PROCID", layout.worldSize, tasks.name);
  checkBelow(layout.nodeRank, "SLURM_NODEID", layout.numNodes, nodes.name);
  return {tasks.name, nodes.name};
}

JobLayout stepTask(const Environment& env, const std::string& jobId) {
  JobLayout layout;
  layout.scheduler = Scheduler::kSlurm;
  layout.jobId = jobId;
  layout.stepId = *firstOf(env, {"SLURM_STEP_ID", "SLURM_STEPID"});
  const StepNames names = readIds(env, layout);

  auto [perNodeName, perNodeValue] =
      stepOrJob(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  std::vector<int> perNode = parseTasksPerNode(perNodeValue, perNodeName);
  checkTaskCounts(layout, perNode, perNodeName, names);
  layout.localWorldSize = perNode[layout.nodeRank];
  checkBelow(layout.localRank, "SLURM_LOCALID", layout.localWorldSize,
             fmt::format("{} on node {}", perNodeName, layout.nodeRank));

  auto [listName, list] =
      stepOrJob(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  layout.hosts = detail::hostsOf(listName, list);
  checkHosts(layout, listName, names, env);
  layout.masterHost = layout.hosts.front();
  layout.cpusPerTask = readInt(env, "SLURM_CPUS_PER_TASK");
  detail::readVisibleDevices(env, layout);
  return layout;
}

}  // namespace

std::optional<JobLayout> detectSlurm(const Environment& env, const HostFacts& host) {
  std::optional<std::string> jobId = firstOf(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
  if (!jobId) return std::nullopt;
  bool inStep = env.has("SLURM_STEP_ID") || env.has("SLURM_STEPID");
  if (inStep && env.has("SLURM_PROCID")) return stepTask(env, *jobId);
  return allocationShell(env, host, *jobId);
}

}  // namespace distrun::cluster
