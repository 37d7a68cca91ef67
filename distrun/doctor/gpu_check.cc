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
  std::sort(indices.begin(), indices.end());
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

std::string gpuList(const std::vector<int>& gpus) {
  std::vector<std::string> parts;
  for (int g : gpus) parts.push_back(std::to_string(g));
  return (gpus.size() == 1 ? "GPU " : "GPUs ") + join(parts, ",");
}

constexpr const char* kPlanFix =
    "let distrun choose each rank's GPU: distrun exec --gpu-bind closest (or srun "
    "--gpus-per-task=1 --gpu-bind=closest)";

Finding planFinding(const GpuFacts& f, const std::vector<int>& visible) {
  const std::vector<int>& plan = *f.planGpus;
  std::string rank = fmt::format("local rank {}", f.localRank);
  if (physicalIndices(f) && visible != plan) {
    return {CheckState::kWarn,
            fmt::format("{} but the plan gives {} {}, the closest to its cores", visibleText(f),
                        rank, gpuList(plan)),
            kPlanFix};
  }
  if (visible.size() != plan.size()) {
    return {CheckState::kWarn,
            fmt::format("{} shows {} {} but the plan gives it {}", visibleText(f), rank,
                        counted(visible.size(), "GPU"), plan.size()),
            kPlanFix};
  }
  return {CheckState::kOk,
          fmt::format("{}: {}'s {} in the plan", visibleText(f), rank, gpuList(plan)), ""};
}

std::vector<Finding> visibilityFindings(const GpuFacts& f) {
  if (f.visibleDevices.empty()) {
    std::string plan = f.planGpus ? fmt::format(" (local rank {}'s in the plan: {})", f.localRank,
                                                gpuList(*f.planGpus))
                                  : "";
    return {{CheckState::kOk, "no visibility variable: the task sees every GPU" + plan, ""}};
  }
  std::optional<std::vector<int>> visible = visibleIndices(f);
  if (!visible)
    return {{CheckState::kOk, visibleText(f) + " (ids, not compared with the plan)", ""}};
  int reach = static_cast<int>(f.gpus.size());
  bool renumbered = f.visibleVariable != "SLURM_STEP_GPUS";
  if (renumbered && !visible->empty() && visible->back() >= reach) {
    return {{CheckState::kFail,
             fmt::format("{} names GPU {} but the task reaches {}", visibleText(f), visible->back(),
                         counted(static_cast<uint64_t>(reach), "GPU")),
             fmt::format("set {} to GPUs below {}, or let distrun exec --gpu-bind closest set it",
                         f.visibleVariable, reach)}};
  }
  if (f.planGpus) return {planFinding(f, *visible)};
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

GpuFacts readGpuFacts(const ProbeContext& ctx, const ToolRunner& run, const std::string& root) {
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
      f.planGpus = binding::rankGpus(node, f.localRank, f.ranks.ranks);
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
  return judgeGpus(readGpuFacts(ctx, limitedRunner(toolLimit(ctx.limit())), ""));
}

}  // namespace distrun::doctor
