#include "distrun/doctor/cgroup_check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"
#include "distrun/doctor/checks.h"
#include "distrun/doctor/node_facts.h"

namespace distrun::doctor {
namespace {

namespace fs = std::filesystem;

// A v1 memory.limit_in_bytes at or above this is the kernel's "no limit"
// (PAGE_COUNTER_MAX pages, 9223372036854771712 on 4 KiB pages).
constexpr uint64_t kNoLimitAbove = uint64_t{1} << 62;

std::optional<std::string> readWord(const std::string& path) {
  std::optional<std::string> text = readFileIfPresent(path);
  if (!text) return std::nullopt;
  return std::string(trim(*text));
}

std::optional<uint64_t> readNumber(const std::string& path) {
  std::optional<std::string> word = readWord(path);
  if (!word) return std::nullopt;
  try {
    return static_cast<uint64_t>(parseCount(*word, path, INT64_MAX));
  } catch (const ConfigError&) {
    return std::nullopt;  // "max", "-1": no limit
  }
}

// Where each controller's files for this process are.
struct Hierarchies {
  int version = 0;
  std::vector<std::pair<std::string, std::string>> v1;  // (controllers, path)
  std::optional<std::string> v2;                        // the unified path
};

Hierarchies readHierarchies(const std::string& root) {
  Hierarchies h;
  std::ifstream in(root + "/proc/self/cgroup");
  if (!in) return h;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> parts = split(line, ':');
    if (parts.size() < 3) continue;
    std::string path = line.substr(parts[0].size() + parts[1].size() + 2);
    if (parts[1].empty()) {
      h.v2 = path;
    } else {
      h.v1.emplace_back(parts[1], path);
    }
  }
  if (h.v1.empty() && !h.v2) return h;  // an empty file: no cgroup
  h.version = h.v1.empty() ? 2 : 1;
  if (!fs::exists(root + "/sys/fs/cgroup/cgroup.controllers")) h.v2.reset();
  return h;
}

// The folder of `controller`'s cgroup for this process and its path in the
// hierarchy; nullopt when no hierarchy has it.
std::optional<std::pair<std::string, std::string>> controllerDir(const Hierarchies& h,
                                                                 const std::string& root,
                                                                 const std::string& controller) {
  for (const auto& [controllers, path] : h.v1) {
    std::vector<std::string> names = split(controllers, ',');
    if (std::find(names.begin(), names.end(), controller) == names.end()) continue;
    std::string mount = root + "/sys/fs/cgroup/" + controllers;
    if (!fs::exists(mount)) mount = root + "/sys/fs/cgroup/" + controller;
    return std::make_pair(mount, path);
  }
  if (h.v2) return std::make_pair(root + "/sys/fs/cgroup", *h.v2);
  return std::nullopt;
}

// `mount` + `path` and each of its ancestors up to the hierarchy's root.
std::vector<std::string> selfAndAncestors(const std::string& mount, const std::string& path) {
  std::vector<std::string> dirs;
  fs::path p = fs::path("/") / fs::path(path).relative_path();
  for (;; p = p.parent_path()) {
    dirs.push_back(mount + (p == "/" ? "" : p.string()));
    if (p == p.parent_path()) break;
  }
  return dirs;
}

template <typename T>
void keepSmaller(std::optional<T>& tightest, std::optional<T> value) {
  if (value && (!tightest || *value < *tightest)) tightest = value;
}

std::optional<double> v2Quota(const std::string& dir) {
  std::optional<std::string> text = readWord(dir + "/cpu.max");
  if (!text) return std::nullopt;
  std::vector<std::string> parts = split(*text, ' ');
  if (parts.size() != 2 || parts[0] == "max") return std::nullopt;
  try {
    double quota = static_cast<double>(parseCount(parts[0], "cpu.max", INT64_MAX));
    double period = static_cast<double>(parseCount(parts[1], "cpu.max", INT64_MAX));
    return period > 0 ? std::optional<double>(quota / period) : std::nullopt;
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}

std::optional<double> v1Quota(const std::string& dir) {
  std::optional<uint64_t> quota = readNumber(dir + "/cpu.cfs_quota_us");
  std::optional<uint64_t> period = readNumber(dir + "/cpu.cfs_period_us");
  if (!quota || !period || *period == 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

std::optional<uint64_t> memoryLimitIn(const std::string& dir, bool v2) {
  std::optional<uint64_t> limit = readNumber(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
  if (limit && *limit >= kNoLimitAbove) return std::nullopt;
  return limit;
}

bool isV2(const Hierarchies& h, const std::string& mount, const std::string& root) {
  return h.v2 && mount == root + "/sys/fs/cgroup";
}

std::optional<binding::CpuList> readCpuset(const Hierarchies& h, const std::string& root) {
  auto dir = controllerDir(h, root, "cpuset");
  if (!dir) return std::nullopt;
  // v2 has the file only where the parent enabled the controller: the
  // nearest cgroup that has it decides.
  for (const std::string& folder : selfAndAncestors(dir->first, dir->second)) {
    for (const char* file : {"/cpuset.cpus.effective", "/cpuset.effective_cpus", "/cpuset.cpus"}) {
      std::optional<std::string> text = readWord(folder + file);
      if (!text || text->empty()) continue;
      try {
        return binding::parseCpuList(*text, folder + file);
      } catch (const ConfigError&) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

std::string cpusText(double cpus) {
  return std::floor(cpus) == cpus ? fmt::format("{:.0f}", cpus) : fmt::format("{:.2f}", cpus);
}

}  // namespace

CgroupFacts readCgroup(const std::string& root) {
  Hierarchies h = readHierarchies(root);
  CgroupFacts facts;
  facts.version = h.version;
  if (h.version == 0) return facts;
  auto cpuset = controllerDir(h, root, "cpuset");
  facts.path = cpuset ? cpuset->second : h.v2.value_or("/");
  facts.cpus = readCpuset(h, root);
  if (auto cpu = controllerDir(h, root, "cpu")) {
    bool v2 = isV2(h, cpu->first, root);
    for (const std::string& dir : selfAndAncestors(cpu->first, cpu->second)) {
      keepSmaller(facts.cpuQuota, v2 ? v2Quota(dir) : v1Quota(dir));
    }
  }
  if (auto memory = controllerDir(h, root, "memory")) {
    bool v2 = isV2(h, memory->first, root);
    for (const std::string& dir : selfAndAncestors(memory->first, memory->second)) {
      keepSmaller(facts.memoryLimit, memoryLimitIn(dir, v2));
    }
  }
  return facts;
}

JobRequest readJobRequest(const Environment& env) {
  JobRequest r;
  r.jobId = env.getOr("SLURM_JOB_ID", "");
  auto number = [&env](const std::string& name) -> std::optional<uint64_t> {
    std::optional<std::string> text = env.get(name);
    if (!text) return std::nullopt;
    try {
      return static_cast<uint64_t>(parseCount(trim(*text), name, INT64_MAX));
    } catch (const ConfigError&) {
      return std::nullopt;
    }
  };
  if (auto cpus = number("SLURM_CPUS_ON_NODE")) r.cpus = static_cast<int>(*cpus);
  if (auto perNode = number("SLURM_MEM_PER_NODE"); perNode && *perNode > 0) {
    r.memoryBytes = *perNode * kMiB;
    r.memorySource = fmt::format("SLURM_MEM_PER_NODE={}", *perNode);
  } else if (auto perCpu = number("SLURM_MEM_PER_CPU"); perCpu && *perCpu > 0 && r.cpus) {
    r.memoryBytes = *perCpu * kMiB * static_cast<uint64_t>(*r.cpus);
    r.memorySource = fmt::format("SLURM_MEM_PER_CPU={} x {}", *perCpu, counted(*r.cpus, "CPU"));
  }
  return r;
}

namespace {

std::string limitsText(const CgroupFacts& f) {
  std::string cpus = f.cpus ? fmt::format("cpuset {} ({})", binding::formatCpuList(*f.cpus),
                                          counted(f.cpus->size(), "CPU"))
                            : "no cpuset";
  std::string quota =
      f.cpuQuota ? fmt::format("CPU quota {} CPUs", cpusText(*f.cpuQuota)) : "no CPU quota";
  std::string memory = f.memoryLimit ? fmt::format("memory limit {}", formatBytes(*f.memoryLimit))
                                     : "no memory limit";
  return fmt::format("cgroup v{} {}: {}, {}, {}", f.version, f.path, cpus, quota, memory);
}

std::string askedText(const JobRequest& r) {
  std::vector<std::string> parts;
  if (r.cpus) parts.push_back(fmt::format("{} (SLURM_CPUS_ON_NODE)", counted(*r.cpus, "CPU")));
  if (r.memoryBytes)
    parts.push_back(fmt::format("{} ({})", formatBytes(*r.memoryBytes), r.memorySource));
  if (parts.empty()) return fmt::format("job {} names no CPUs or memory for this node", r.jobId);
  return fmt::format("job {} asked for {} on this node", r.jobId, join(parts, " and "));
}

constexpr const char* kCpuFix =
    "give the step all of the job's CPUs on the node: srun --cpus-per-task=$SLURM_CPUS_ON_NODE "
    "for one task per node, --cpus-per-task=$SLURM_CPUS_PER_TASK for one per rank (srun no "
    "longer takes sbatch's since Slurm 22.05); if the job's own cgroup is short, tell the "
    "admins (cgroup.conf)";
constexpr const char* kMemoryFix =
    "give the step the job's memory: srun --mem=0 (all of the job's memory on the node); if the "
    "job's own cgroup is short, tell the admins (cgroup.conf)";

std::vector<Finding> shortfalls(const CgroupFacts& f, const JobRequest& r) {
  std::vector<Finding> found;
  if (!r.cpus) return found;
  int want = *r.cpus;
  if (f.cpus && static_cast<int>(f.cpus->size()) < want) {
    found.push_back(
        {CheckState::kFail,
         fmt::format("the cpuset holds {} ({}) of the {} asked", counted(f.cpus->size(), "CPU"),
                     binding::formatCpuList(*f.cpus), want),
         kCpuFix});
  }
  if (f.cpuQuota && *f.cpuQuota + 1e-9 < want) {
    found.push_back(
        {CheckState::kFail,
         fmt::format("the CPU quota allows {} CPUs of the {} asked", cpusText(*f.cpuQuota), want),
         kCpuFix});
  }
  return found;
}

}  // namespace

CheckResult judgeCgroup(const CgroupFacts& f, const JobRequest& r) {
  if (f.version == 0) return skip("cgroup", "no cgroup found (/proc/self/cgroup is missing)");
  std::vector<Finding> found = shortfalls(f, r);
  if (r.memoryBytes && f.memoryLimit && *f.memoryLimit < *r.memoryBytes) {
    found.push_back({CheckState::kFail,
                     fmt::format("the memory limit is {} of the {} asked",
                                 formatBytes(*f.memoryLimit), formatBytes(*r.memoryBytes)),
                     kMemoryFix});
  }
  std::string prefix = limitsText(f);
  if (!r.jobId.empty()) prefix += "; " + askedText(r);
  CheckResult result = combine("cgroup", found);
  result.detail = result.detail.empty() ? prefix : prefix + ": " + result.detail;
  if (f.cpus) result.values["cpuset_cpus"] = static_cast<double>(f.cpus->size());
  if (f.cpuQuota) result.values["cpu_quota_cpus"] = *f.cpuQuota;
  if (f.memoryLimit) result.values["memory_limit_bytes"] = static_cast<double>(*f.memoryLimit);
  if (r.cpus) result.values["asked_cpus"] = *r.cpus;
  if (r.memoryBytes) result.values["asked_memory_bytes"] = static_cast<double>(*r.memoryBytes);
  result.facts["cgroup"] = f.path;
  return result;
}

CheckResult checkCgroup(const ProbeContext& ctx) {
  return judgeCgroup(readCgroup(""), readJobRequest(ctx.env));
}

}  // namespace distrun::doctor
