#include "distrun/doctor/binding_check.h"

#include <algorithm>

#include <fmt/format.h>

#include "distrun/binding/bind_flags.h"
#include "distrun/binding/binding_plan.h"
#include "distrun/binding/local_topology.h"
#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/doctor/cgroup_check.h"
#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

using binding::CpuList;
using binding::formatCpuList;

constexpr const char* kCpuBinding = "cpu-binding";

constexpr const char* kOneTaskFix =
    "start one task per node with all of the job's CPUs: srun --ntasks-per-node=1 "
    "--cpus-per-task=$SLURM_CPUS_ON_NODE --cpu-bind=none (distrun submit writes this), with no "
    "taskset or numactl around distrun";

std::string perRankFix(const std::vector<binding::RankBinding>& plan) {
  return fmt::format(
      "bind each task to its rank's cores: srun --cpu-bind={} (distrun submit -- exec writes "
      "it)",
      binding::srunCpuBind(plan));
}

std::string planWords(const RanksPerNode& r) {
  std::string ranks = r.ranks == 1 ? "1 rank per node" : fmt::format("{} ranks per node", r.ranks);
  if (r.source == "--nproc-per-node") return ranks + " (--nproc-per-node)";
  if (r.source == "GPUs") return ranks + " (one per GPU)";
  if (r.source == "tasks on this node") return ranks + " (the step's tasks on this node)";
  return ranks;
}

std::string taskWords(const BindingFacts& f) {
  return f.oneTaskPerRank ? fmt::format("local rank {}", f.localRank) : "the task";
}

// Which CPUs are the job's is unknown when Slurm says it has fewer on this
// node than the cpuset holds: no cgroup confines the job (a shared node
// under task/affinity alone).
bool onlyCountsKnown(const BindingFacts& f) {
  return f.slurmCpusOnNode && static_cast<int>(f.jobCpus.size()) > *f.slurmCpusOnNode;
}

CheckResult judgeCounts(const BindingFacts& f) {
  int jobCpus = *f.slurmCpusOnNode;
  int want = f.oneTaskPerRank ? std::max(1, jobCpus / f.ranks.ranks) : jobCpus;
  int have = static_cast<int>(f.affinity.size());
  std::string detail = fmt::format(
      "{} may use {} ({}); the job has {} on this node (SLURM_CPUS_ON_NODE; no cgroup says which)",
      taskWords(f), counted(have, "CPU"), formatCpuList(f.affinity), counted(jobCpus, "CPU"));
  if (f.oneTaskPerRank) detail += fmt::format(", {} per rank for {}", want, planWords(f.ranks));
  std::string fix = f.oneTaskPerRank ? fmt::format(
                                           "give each task its share: srun --cpus-per-task={} "
                                           "--cpu-bind=cores",
                                           want)
                                     : kOneTaskFix;
  CheckResult result = have >= want ? ok(kCpuBinding, detail) : fail(kCpuBinding, detail, fix);
  result.values["task_cpus"] = have;
  result.values["job_cpus"] = jobCpus;
  result.facts["task_cpus"] = formatCpuList(f.affinity);
  return result;
}

std::optional<std::vector<binding::RankBinding>> planOn(const BindingFacts& f,
                                                        const CpuList& jobCores,
                                                        std::string& error) {
  binding::BindRequest request;
  request.ranks = f.ranks.ranks;
  request.allowed = jobCores;
  try {
    return binding::bindRanks(*f.node, request);
  } catch (const Error& e) {
    error = e.what();
    return std::nullopt;
  }
}

CpuList unionOf(const std::vector<binding::RankBinding>& plan) {
  CpuList all;
  for (const binding::RankBinding& b : plan) all.insert(all.end(), b.cpus.begin(), b.cpus.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

CheckResult judgePlan(const BindingFacts& f, const std::vector<binding::RankBinding>& plan) {
  CpuList want = f.oneTaskPerRank ? plan[static_cast<size_t>(f.localRank)].cpus : unionOf(plan);
  CpuList have = coresOf(f.affinity, f.cpus);
  CpuList missing = binding::without(want, have);
  CpuList extra = binding::without(have, want);
  std::string task = fmt::format("{} may use CPUs {}", taskWords(f), formatCpuList(f.affinity));
  std::string fix = f.oneTaskPerRank ? perRankFix(plan) : kOneTaskFix;
  CheckResult result;
  if (!missing.empty()) {
    std::string wants = f.oneTaskPerRank ? "gives it" : "wants";
    result = fail(kCpuBinding,
                  fmt::format("{} but the plan for {} {} cores {} (of {} {}): it lacks {}", task,
                              planWords(f.ranks), wants, formatCpuList(want), f.jobCpusSource,
                              formatCpuList(f.jobCpus), formatCpuList(missing)),
                  fix);
  } else if (f.oneTaskPerRank && !extra.empty()) {
    result = warn(kCpuBinding,
                  fmt::format("{}, more than its cores {} in the plan for {}: its threads can "
                              "run on other ranks' cores",
                              task, formatCpuList(want), planWords(f.ranks)),
                  fix);
  } else {
    std::string whose = f.oneTaskPerRank ? "its cores" : "every core";
    result = ok(kCpuBinding, fmt::format("{}: {} of the plan for {}, cores {}", task, whose,
                                         planWords(f.ranks), formatCpuList(want)));
  }
  result.values["task_cpus"] = static_cast<double>(f.affinity.size());
  result.values["plan_cores"] = static_cast<double>(want.size());
  result.facts["task_cpus"] = formatCpuList(f.affinity);
  result.facts["plan_cores"] = formatCpuList(want);
  return result;
}

}  // namespace

BindingFacts readBindingFacts(const ProbeContext& ctx, const std::string& root) {
  BindingFacts f;
  try {
    f.affinity = usableCpus();
  } catch (const Error&) {
    // left empty: the judge then finds every core missing, which is the truth
  }
  f.cpus = readCpuFacts(root);
  std::optional<CpuList> cpuset = readCgroup(root).cpus;
  f.jobCpus = cpuset ? *cpuset : f.cpus.online;
  f.jobCpusSource = cpuset ? "the cgroup cpuset" : "the online CPUs";
  f.slurmCpusOnNode = readJobRequest(ctx.env).cpus;
  try {
    f.node = ctx.site && ctx.site->node ? *ctx.site->node
                                        : binding::readNodeTopology(ctx.env, ctx.host.hostname);
  } catch (const Error& e) {
    f.nodeError = e.what();
  }
  f.ranks =
      ranksPerNode(ctx.options, ctx.layout, f.node ? static_cast<int>(f.node->gpus.size()) : 0);
  f.localRank = ctx.layout.localRank;
  f.oneTaskPerRank = ctx.layout.localWorldSize > 1;
  return f;
}

CheckResult judgeCpuBinding(const BindingFacts& f) {
  if (!f.node) return skip(kCpuBinding, "cannot read the node to plan on: " + f.nodeError);
  if (f.oneTaskPerRank && f.localRank >= f.ranks.ranks) {
    return skip(kCpuBinding, fmt::format("local rank {} is outside the plan for {}", f.localRank,
                                         planWords(f.ranks)));
  }
  if (onlyCountsKnown(f)) return judgeCounts(f);
  CpuList jobCores = coresOf(f.jobCpus, f.cpus);
  std::string error;
  std::optional<std::vector<binding::RankBinding>> plan = planOn(f, jobCores, error);
  if (!plan) return skip(kCpuBinding, "no binding plan: " + error);
  bool coreEach = std::none_of(plan->begin(), plan->end(),
                               [](const binding::RankBinding& b) { return b.cpus.empty(); });
  if (!coreEach) {
    return warn(
        kCpuBinding,
        fmt::format("{} outnumber the job's {} on this node ({}): ranks share cores",
                    planWords(f.ranks), counted(jobCores.size(), "core"), formatCpuList(jobCores)),
        "run fewer ranks per node (--nproc-per-node) or ask for more CPUs per node");
  }
  return judgePlan(f, *plan);
}

CheckResult checkCpuBinding(const ProbeContext& ctx) {
  return judgeCpuBinding(readBindingFacts(ctx, ""));
}

}  // namespace distrun::doctor
