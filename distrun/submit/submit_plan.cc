#include "distrun/submit/submit_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "distrun/binding/binding_plan.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/submit/slurm_time.h"

namespace distrun::submit {
namespace {

const std::vector<std::string> kCommands = {"run", "train", "bench", "exec", "doctor"};

void checkCommand(const std::vector<std::string>& command) {
  if (command.empty()) {
    throw UsageError(
        "submit: expected a distrun command after -- (run, train, bench, exec or doctor)");
  }
  if (std::find(kCommands.begin(), kCommands.end(), command[0]) != kCommands.end()) return;
  std::optional<std::string> near = closestName(command[0], kCommands);
  throw UsageError(
      fmt::format("submit: '{}' is not a distrun command a batch job runs: expected "
                  "run, train, bench, exec or doctor{}",
                  command[0], near ? " (did you mean " + *near + "?)" : ""));
}

// The value of one of the command's own flags (any of `spellings`, as
// "--flag V" or "--flag=V"), looked for up to a "--".
std::optional<std::string> commandFlag(const std::vector<std::string>& command,
                                       const std::vector<std::string>& spellings) {
  for (size_t i = 1; i < command.size() && command[i] != "--"; ++i) {
    const std::string& a = command[i];
    for (const std::string& flag : spellings) {
      if (a == flag && i + 1 < command.size()) return command[i + 1];
      if (a.rfind(flag + "=", 0) == 0) return a.substr(a.find('=') + 1);
    }
  }
  return std::nullopt;
}

// The value of the command's own --nproc-per-node (torchrun's spellings).
std::optional<std::string> commandRanks(const std::vector<std::string>& command) {
  return commandFlag(command, {"--nproc-per-node", "--nproc_per_node"});
}

// `distrun doctor` for the nodes of the job, told what the command will
// need: its ranks per node, its container and the folder of its snapshot,
// then the user's --doctor-arg flags (later flags win in the doctor).
std::vector<std::string> doctorStep(const SubmitRequest& r, std::optional<int> ranks) {
  std::vector<std::string> step = {r.distrun, "doctor"};
  if (ranks) step.insert(step.end(), {"--nproc-per-node", std::to_string(*ranks)});
  for (const char* flag : {"--container", "--snapshot"}) {
    if (auto value = commandFlag(r.command, {flag})) step.insert(step.end(), {flag, *value});
  }
  if (r.command[0] == "train") step.insert(step.end(), {"--python", "none"});  // LibTorch
  step.insert(step.end(), r.doctorArgs.begin(), r.doctorArgs.end());
  return step;
}

std::optional<int> siteNumber(const cluster::SiteProfile* site, const std::string& key) {
  if (site == nullptr || !site->submitDefaults.contains(key)) return std::nullopt;
  std::string what = fmt::format("'submit {}' in {}", key, site->path);
  return static_cast<int>(parseCount(site->submitDefaults.at(key), what, 1024));
}

std::optional<std::string> siteText(const cluster::SiteProfile* site, const std::string& key) {
  if (site == nullptr || !site->submitDefaults.contains(key)) return std::nullopt;
  return site->submitDefaults.at(key);
}

std::optional<int> ranksPerNode(const SubmitRequest& r, std::optional<int> gpus) {
  std::optional<std::string> own = commandRanks(r.command);
  bool ownIsNumber =
      own && !own->empty() && own->find_first_not_of("0123456789") == std::string::npos;
  if (r.nprocPerNode && ownIsNumber && std::stoi(*own) != *r.nprocPerNode) {
    throw UsageError(fmt::format(
        "submit: --nproc-per-node {} contradicts the command's --nproc-per-node {}: give it once",
        *r.nprocPerNode, *own));
  }
  if (r.nprocPerNode) return r.nprocPerNode;
  if (ownIsNumber) return std::stoi(*own);
  if (own) return std::nullopt;  // gpu, cpu, auto: the node agent decides
  return gpus.value_or(1);
}

struct TimeLimit {
  std::string text;  // as the user or the site gave it
  long seconds = 0;
};

std::optional<TimeLimit> timeLimit(const SubmitRequest& r, const cluster::SiteProfile* site) {
  std::optional<std::string> text = r.time ? r.time : siteText(site, "time");
  if (!text) return std::nullopt;
  return TimeLimit{*text,
                   parseSlurmTime(*text, r.time ? "--time" : "'submit time' in " + site->path)};
}

// The warning's seconds: none for a program outside the protocol; the
// default at most half the limit, so that a short job keeps half its time;
// a --signal-grace that leaves no time to train is refused.
int signalGrace(const SubmitRequest& r, const std::optional<TimeLimit>& limit) {
  if (!takesTheWarning(r)) return 0;
  if (!r.signalGrace) {
    return limit ? static_cast<int>(std::min<long>(kDefaultSignalGrace, limit->seconds / 2))
                 : kDefaultSignalGrace;
  }
  if (limit && limit->seconds <= *r.signalGrace) {
    throw UsageError(
        fmt::format("submit: --signal-grace {} s leaves no time to train within --time "
                    "{}: shorten the grace or lengthen the limit",
                    *r.signalGrace, limit->text));
  }
  return *r.signalGrace;
}

// The sbatch flags the script writes from submit's own, by every spelling
// sbatch takes, with the submit flag that sets each.
struct WrittenFlag {
  std::vector<std::string> spellings;
  std::string submitFlag;
  bool onlyWithTheWarning = false;  // written only for a job that takes it
};

const std::vector<WrittenFlag>& writtenFlags() {
  static const std::vector<WrittenFlag> flags = {
      {{"--nodes", "-N"}, "--nodes"},
      {{"--ntasks-per-node"}, "--nproc-per-node"},
      {{"--cpus-per-task", "-c"}, "--cpus-per-task"},
      {{"--gpus-per-node"}, "--gpus-per-node"},
      {{"--time", "-t"}, "--time"},
      {{"--partition", "-p"}, "--partition"},
      {{"--account", "-A"}, "--account"},
      {{"--qos", "-q"}, "--qos"},
      {{"--job-name", "-J"}, "--job-name"},
      {{"--output", "-o"}, "--output"},
      {{"--signal"}, "--signal-grace", true},
      {{"--requeue", "--no-requeue"}, "--max-requeues", true}};
  return flags;
}

// "--nodes" of "--nodes=8" or "--nodes 8", "-N" of "-N8" or "-N 8".
std::string sbatchFlagName(const std::string& arg) {
  if (arg.rfind("--", 0) == 0) return arg.substr(0, arg.find_first_of("= "));
  return arg.substr(0, 2);
}

// An --sbatch-arg that sets what the script writes from submit's own flags
// would make two lines, the later winning unseen: refused, naming the flag.
void checkSbatchArgs(const SubmitRequest& r) {
  for (const std::string& arg : r.sbatchArgs) {
    const std::string name = sbatchFlagName(arg);
    for (const WrittenFlag& flag : writtenFlags()) {
      if (std::find(flag.spellings.begin(), flag.spellings.end(), name) == flag.spellings.end()) {
        continue;
      }
      if (flag.onlyWithTheWarning && !takesTheWarning(r)) continue;
      throw UsageError(fmt::format(
          "submit: --sbatch-arg={} sets sbatch's {}, which the script already writes from "
          "distrun submit's {}: give {} instead",
          arg, flag.spellings.front(), flag.submitFlag, flag.submitFlag));
    }
  }
}

// exec: one task per rank, bound by srun to the plan's cores when the site
// describes its node type.
void bindTasks(BatchJob& job, const SubmitRequest& r, const cluster::SiteProfile* site) {
  job.cpusPerTask = r.cpusPerTask;
  job.cpuBind = "cores";
  if (site == nullptr || !site->node) return;
  std::vector<binding::RankBinding> plan = binding::planBinding(
      *site->node, {job.tasksPerNode, r.cpusPerTask.value_or(0), job.gpusPerNode.value_or(0)});
  job.cpuBind = binding::srunCpuBind(plan);
  job.exclusive = true;
  if (!job.cpusPerTask) job.cpusPerTask = static_cast<int>(plan.front().cpus.size());
}

// run, train, bench: one distrun per node, which starts and binds the ranks.
void agentPerNode(BatchJob& job, const SubmitRequest& r, std::optional<int> ranks) {
  job.tasksPerNode = 1;
  if (r.cpusPerTask && ranks) {
    job.cpusPerTask = *r.cpusPerTask * *ranks;
  } else {  // the whole node, shared out by distrun among the workers
    job.exclusive = true;
    job.taskTakesTheNode = true;
  }
  if (ranks && !commandRanks(r.command)) {
    job.step.insert(job.step.begin() + 2, {"--nproc-per-node", std::to_string(*ranks)});
  }
}

}  // namespace

bool runsOneTaskPerRank(const std::string& command) { return command == "exec"; }

bool takesTheWarning(const SubmitRequest& r) {
  return r.checkpointOnWarning || (!r.command.empty() && r.command[0] == "train");
}

std::optional<std::string> warningNote(const SubmitRequest& r) {
  if (!r.signalGrace || *r.signalGrace == 0 || takesTheWarning(r)) return std::nullopt;
  return fmt::format(
      "submit: note: --signal-grace {} asks no warning: the program takes no part in "
      "distrun's preemption protocol, so the job runs to its time limit as under plain sbatch "
      "(give --checkpoint-on-warning if it writes a snapshot on SIGUSR1 and exits 79)",
      *r.signalGrace);
}

std::string explainBinding(const BatchJob& job, const cluster::SiteProfile* site) {
  if (site == nullptr || !site->node) {
    return fmt::format(
        "the site profile {} does not describe its nodes: each node plans its "
        "ranks' binding when the job runs ('distrun run --explain' there shows it)\n",
        site == nullptr ? "(none)" : site->name);
  }
  if (!job.ranksPerNode) {
    return "the ranks per node are decided on each node ('gpu' or 'auto'): 'distrun run "
           "--explain' there shows the binding\n";
  }
  int cpusPerRank = job.cpusPerTask ? *job.cpusPerTask * job.tasksPerNode / *job.ranksPerNode : 0;
  std::vector<binding::RankBinding> plan = binding::planBinding(
      *site->node, {*job.ranksPerNode, cpusPerRank, job.gpusPerNode.value_or(0)});
  std::vector<std::string> hosts;
  for (int n = 0; n < job.nodes; ++n) hosts.push_back(fmt::format("(node {})", n));
  return binding::formatPlanTable(plan, hosts);
}

BatchJob planBatchJob(const SubmitRequest& r, const cluster::SiteProfile* site) {
  checkCommand(r.command);
  checkSbatchArgs(r);
  BatchJob job;
  job.jobName = r.jobName.value_or("distrun-" + r.command[0]);
  job.nodes = r.nodes;
  job.gpusPerNode = r.gpusPerNode ? r.gpusPerNode : siteNumber(site, "gpus-per-node");
  std::optional<TimeLimit> limit = timeLimit(r, site);
  if (limit) job.time = formatSlurmTime(limit->seconds);
  job.signalGrace = signalGrace(r, limit);
  job.partition = r.partition ? r.partition : siteText(site, "partition");
  job.account = r.account ? r.account : siteText(site, "account");
  job.qos = r.qos ? r.qos : siteText(site, "qos");
  job.output = r.output;
  job.sbatchArgs = r.sbatchArgs;
  job.maxRequeues = r.maxRequeues;
  job.step = {r.distrun};
  job.step.insert(job.step.end(), r.command.begin(), r.command.end());
  if (site != nullptr) job.environment.emplace_back("DISTRUN_SITE", site->name);
  std::optional<int> ranks = ranksPerNode(r, job.gpusPerNode);
  job.ranksPerNode = ranks;
  if (runsOneTaskPerRank(r.command[0])) {
    job.tasksPerNode = ranks.value_or(1);
    bindTasks(job, r, site);
    // Each task sees the GPU(s) of its local rank's plan.
    if (job.gpusPerNode.value_or(0) > 0)
      job.step.insert(job.step.begin() + 2, {"--gpu-bind", "closest"});
  } else {
    agentPerNode(job, r, ranks);
  }
  if (r.doctor) job.doctorStep = doctorStep(r, ranks);
  if (!r.doctor && !r.doctorArgs.empty()) {
    throw UsageError(fmt::format(
        "submit: --doctor-arg {} is for the doctor's step, which only --doctor adds: add --doctor",
        r.doctorArgs.front()));
  }
  return job;
}

}  // namespace distrun::submit
