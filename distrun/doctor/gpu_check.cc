#include "distrun/doctor/gpu_check.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "distrun/binding/binding_plan.h"
#include "distrun/binding/local_topology.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

constexpr const char* kGpu = "gpu";
constexpr const char* kBrokenFix =
    "the driver cannot reach the GPUs: leave this node out (sbatch --exclude) and tell the admins";

// Each tool run gets a third of the check's time, so both runs and the
// rest of the check end before the check's own limit.
std::chrono::milliseconds toolLimit(std::chrono::milliseconds checkLimit) {
  return std::max(std::chrono::milliseconds(1000), checkLimit / 3);
}

std::string seconds(std::chrono::milliseconds limit) {
  return fmt::format("{:g} s", static_cast<double>(limit.count()) / 1000.0);
}

// The visible devices as indices; nullopt when one is not (a UUID, MIG id).
std::optional<std::vector<int>> visibleIndices(const GpuFacts& f) {
  std::vector<int> indices;
  for (const std::string& id : f.visibleDevices) {
    try {
      indices.push_back(static_cast<int>(parseCount(trim(id), f.visibleVariable)));
    } catch (const ConfigError&) {
      return std::nullopt;
    }
  }
  return indices;
}

// Whether the tool's indices are the node's: it reaches every GPU the plan's
// node has (a device cgroup renumbers what it leaves visible from 0).
bool physicalIndices(const GpuFacts& f) {
  return static_cast<int>(f.gpus.size()) == f.topologyGpus &&
         f.visibleVariable != "SLURM_STEP_GPUS";
}

std::string visibleText(const GpuFacts& f) {
  return f.visibleVariable + "=" + join(f.visibleDevices, ",");
}

constexpr const char* kPlanFix =
    "give every task the node's GPUs (srun --gpus-per-node=N, not --gpus-per-task) and let "
    "distrun make the plan's GPU cuda:LOCAL_RANK: distrun exec --gpu-bind closest";

// torchrun's contract: device LOCAL_RANK of what the task sees is its GPU,
// and the plan's (the closest to its cores).
Finding planFinding(const GpuFacts& f, const std::vector<int>& visible) {
  const int plan = *f.planGpu;
  if (static_cast<size_t>(f.localRank) >= visible.size()) {
    return {CheckState::kWarn,
            fmt::format("{} shows local rank {} {}: cuda:{} (cuda:LOCAL_RANK) is not a device "
                        "it sees, and scripts written for torchrun fail with 'invalid device "
                        "ordinal' (cuda:DISTRUN_LOCAL_DEVICE works)",
                        visibleText(f), f.localRank, counted(visible.size(), "GPU"), f.localRank),
            kPlanFix};
  }
  const int device = visible[static_cast<size_t>(f.localRank)];
  if (physicalIndices(f) && device != plan) {
    return {CheckState::kWarn,
            fmt::format("{}: cuda:{} (LOCAL_RANK) is GPU {} but the plan gives local rank {} "
                        "GPU {}, the closest to its cores",
                        visibleText(f), f.localRank, device, f.localRank, plan),
            kPlanFix};
  }
  return {CheckState::kOk,
          fmt::format("{}: cuda:{} (LOCAL_RANK) is GPU {}, local rank {}'s in the plan",
                      visibleText(f), f.localRank, physicalIndices(f) ? device : plan, f.localRank),
          ""};
}

std::vector<Finding> visibilityFindings(const GpuFacts& f) {
  if (f.visibleDevices.empty()) {
    std::string plan =
        f.planGpu ? fmt::format(" (local rank {}'s in the plan: GPU {})", f.localRank, *f.planGpu)
                  : "";
    return {{CheckState::kOk, "no visibility variable: the task sees every GPU" + plan, ""}};
  }
  std::optional<std::vector<int>> visible = visibleIndices(f);
  if (!visible)
    return {{CheckState::kOk, visibleText(f) + " (ids, not compared with the plan)", ""}};
  int reach = static_cast<int>(f.gpus.size());
  bool renumbered = f.visibleVariable != "SLURM_STEP_GPUS";
  const int highest = visible->empty() ? -1 : *std::max_element(visible->begin(), visible->end());
  if (renumbered && highest >= reach) {
    return {{CheckState::kFail,
             fmt::format("{} names GPU {} but the task reaches {}", visibleText(f), highest,
                         counted(static_cast<uint64_t>(reach), "GPU")),
             fmt::format("set {} to GPUs below {}, or leave it to Slurm (srun --gpus-per-node)",
                         f.visibleVariable, reach)}};
  }
  if (f.planGpu) return {planFinding(f, *visible)};
  if (f.ranks.source == "--nproc-per-node" && f.ranks.ranks > static_cast<int>(visible->size())) {
    return {{CheckState::kWarn,
             fmt::format("{} shows {} to {} ranks per node (--nproc-per-node): ranks share GPUs",
                         visibleText(f), counted(visible->size(), "GPU"), f.ranks.ranks),
             "give the task one GPU per rank (srun --gpus-per-node=N) or run fewer ranks"}};
  }
  return {{CheckState::kOk, visibleText(f), ""}};
}

bool ofThisJob(const GpuFacts& f, const GpuProcess& p) {
  auto cgroup = f.processCgroups.find(p.pid);
  if (f.jobId.empty() || cgroup == f.processCgroups.end() || !cgroup->second) return false;
  for (const std::string& line : split(*cgroup->second, '\n')) {
    std::string_view path = trim(line);
    std::string job = "/job_" + f.jobId;
    size_t at = path.find(job);
    if (at != std::string_view::npos &&
        (at + job.size() == path.size() || path[at + job.size()] == '/')) {
      return true;
    }
  }
  return false;
}

// The ids of the GPUs this task uses: its visible ones when the indices
// are the node's, else every GPU the tool lists.
std::set<std::string> taskGpuIds(const GpuFacts& f) {
  std::optional<std::vector<int>> visible = visibleIndices(f);
  std::set<std::string> ids;
  for (const GpuDevice& g : f.gpus) {
    bool used = !visible || visible->empty() || !physicalIndices(f) ||
                std::count(visible->begin(), visible->end(), g.index) > 0;
    if (used) ids.insert(g.id);
  }
  return ids;
}

std::string processText(const GpuFacts& f, const GpuProcess& p) {
  std::string where;
  for (const GpuDevice& g : f.gpus) {
    if (!p.gpu.empty() && g.id == p.gpu) where = fmt::format(" on GPU {}", g.index);
  }
  std::string memory = p.usedMiB ? fmt::format(", {:.0f} MiB", *p.usedMiB) : "";
  return fmt::format("pid {} ({}{}{})", p.pid, p.name, memory, where);
}

std::vector<Finding> processFindings(const GpuFacts& f, CheckResult& result) {
  if (!f.processList) return {};
  const ToolResult& list = *f.processList;
  if (list.timedOut || (list.exitCode != 0 && f.processes.empty())) {
    std::string why = list.timedOut
                          ? "did not answer within " + seconds(f.limit)
                          : fmt::format("exit {}: {}", list.exitCode,
                                        firstLine(list.err.empty() ? list.out : list.err));
    return {{CheckState::kWarn, fmt::format("{} cannot list the GPUs' processes: {}", f.tool, why),
             fmt::format("run {} on the node to see why", f.tool)}};
  }
  std::set<std::string> ours = taskGpuIds(f);
  std::vector<std::string> foreign;
  double memory = 0;
  for (const GpuProcess& p : f.processes) {
    if (!(p.gpu.empty() || ours.count(p.gpu)) || ofThisJob(f, p)) continue;
    if (foreign.size() < 3) foreign.push_back(processText(f, p));
    memory += p.usedMiB.value_or(0);
    result.values["foreign_processes"] += 1;
  }
  result.values["foreign_memory_mib"] = memory;
  int count = static_cast<int>(result.values["foreign_processes"]);
  if (count == 0) return {{CheckState::kOk, "no other process holds them", ""}};
  std::string more = count > 3 ? fmt::format(" and {} more", count - 3) : "";
  std::string hold = count == 1 ? "holds" : "hold";
  if (f.jobId.empty()) {
    return {{CheckState::kWarn, fmt::format("{}{} {} the GPUs", join(foreign, ", "), more, hold),
             "stop them, or choose free GPUs with " + (f.visibleVariable.empty()
                                                           ? std::string("CUDA_VISIBLE_DEVICES")
                                                           : f.visibleVariable)}};
  }
  return {{CheckState::kFail,
           fmt::format("{}{} {} the task's GPUs, not of job {}", join(foreign, ", "), more, hold,
                       f.jobId),
           "another job's or a stale process holds them: leave this node out (sbatch --exclude) "
           "and tell the admins"}};
}

std::string answerText(const GpuFacts& f) {
  std::vector<std::string> names;
  for (const GpuDevice& g : f.gpus) {
    if (!g.name.empty() && std::find(names.begin(), names.end(), g.name) == names.end()) {
      names.push_back(g.name);
    }
  }
  std::string kinds = names.empty() ? "" : " (" + join(names, ", ") + ")";
  return fmt::format("{} answer {}{}", counted(f.gpus.size(), "GPU"), f.tool, kinds);
}

std::optional<CheckResult> toolFailure(const GpuFacts& f) {
  const ToolResult& l = *f.listing;
  std::string devices = join(f.deviceFiles, ", ");
  if (l.exitCode == 127) {
    return warn(kGpu, fmt::format("{} is not on PATH; the node has {}", f.tool, devices),
                fmt::format("put {} on PATH (module load cuda or rocm) so that doctor can ask "
                            "the GPUs",
                            f.tool));
  }
  if (l.timedOut) {
    return fail(kGpu, fmt::format("{} did not answer within {}", f.tool, seconds(f.limit)),
                "the GPU or its driver hangs: leave this node out (sbatch --exclude) and tell the "
                "admins");
  }
  if (!f.gpus.empty()) return std::nullopt;
  std::string said = firstLine(l.err.empty() ? l.out : l.err);
  return fail(kGpu,
              fmt::format("{} lists no GPU (exit {}{}); the node has {}", f.tool, l.exitCode,
                          said.empty() ? "" : ": " + said, devices),
              kBrokenFix);
}

}  // namespace

GpuFacts readGpuFacts(const ProbeContext& ctx, const GpuTool& run, const std::string& root) {
  GpuFacts f;
  f.vendor = findGpuVendor(root, f.deviceFiles);
  if (f.vendor == GpuVendor::kNone) return f;
  f.limit = toolLimit(ctx.limit());
  f.jobId = ctx.env.getOr("SLURM_JOB_ID", "");
  std::tie(f.visibleDevices, f.visibleVariable) = cluster::readVisibleDevices(ctx.env);
  readGpuTools(f, run, root);
  try {
    binding::NodeTopology node = ctx.site && ctx.site->node
                                     ? *ctx.site->node
                                     : binding::readNodeTopology(ctx.env, ctx.host.hostname);
    f.topologyGpus = static_cast<int>(node.gpus.size());
    f.ranks = ranksPerNode(ctx.options, ctx.layout, f.topologyGpus);
    f.oneTaskPerRank = ctx.layout.localWorldSize > 1;
    f.localRank = ctx.layout.localRank;
    if (f.oneTaskPerRank && f.topologyGpus > 0) {
      int device = binding::rankDevice(node, f.localRank, f.ranks.ranks);
      f.planGpu = node.gpus[static_cast<size_t>(device)].index;
    }
  } catch (const Error& e) {
    f.planNote = e.what();
  }
  return f;
}

CheckResult judgeGpus(const GpuFacts& f) {
  if (f.vendor == GpuVendor::kNone) {
    return skip(kGpu, "no GPU on this node (no /dev/nvidia0, no /dev/kfd)");
  }
  if (std::optional<CheckResult> failure = toolFailure(f)) return *failure;
  CheckResult result;
  std::vector<Finding> found = {{CheckState::kOk, answerText(f), ""}};
  for (const Finding& v : visibilityFindings(f)) found.push_back(v);
  if (!f.planNote.empty()) found.push_back({CheckState::kOk, "no plan: " + f.planNote, ""});
  for (const Finding& p : processFindings(f, result)) found.push_back(p);
  CheckResult combined = combine(kGpu, found);
  combined.values = result.values;
  combined.values["gpus"] = static_cast<double>(f.gpus.size());
  combined.facts["tool"] = f.tool;
  if (!f.visibleDevices.empty()) combined.facts["visible_devices"] = join(f.visibleDevices, ",");
  return combined;
}

CheckResult checkGpus(const ProbeContext& ctx) {
  return judgeGpus(readGpuFacts(ctx, gpuToolWithin(toolLimit(ctx.limit())), ""));
}

}  // namespace distrun::doctor
