#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distrun/binding/cpu_list.h"
#include "distrun/cluster/job_layout.h"
#include "distrun/doctor/check_result.h"
#include "distrun/doctor/doctor_options.h"

// Private to distrun/doctor: what the checks of the node's system share
// (binding_check, cgroup_check, limits_checks, network_check, gpu_check).
// Each check is a reader of facts (this node's /proc, /sys, limits, tools)
// and a pure judge from facts to a CheckResult, so that tests feed facts by
// hand; the public check function is judge(read(ctx)).

namespace distrun::doctor {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

// A byte count for details, one decimal in the largest binary unit that
// keeps the figure at 1 or above: "512 B", "64.0 KiB", "3.0 MiB", "1.5 GiB".
std::string formatBytes(uint64_t bytes);

// "1 CPU", "2 CPUs": a count with its noun, plural unless 1.
std::string counted(uint64_t count, const std::string& noun);

// One thing a check found. A check that looks at several things (limits,
// gpu) collects findings and combines them into its one result.
struct Finding {
  CheckState state = CheckState::kOk;
  std::string detail;
  std::string fix;  // empty for ok
};

// The result of `check` from `findings`: the worst state among them (ok
// when there are none); the detail is the details of the findings at the
// worst state, then those of the milder ones, joined with "; " (every
// finding's when all are ok); the fix the distinct fixes of the findings
// that are not ok, worst first.
CheckResult combine(const std::string& check, const std::vector<Finding>& findings);

// How many ranks per node the training will run, and what said so: the
// --nproc-per-node option, else the step's tasks on this node when above 1,
// else the node's GPUs (`gpus`) when it has any, else 1.
struct RanksPerNode {
  int ranks = 1;
  std::string source;  // "--nproc-per-node", "tasks on this node", "GPUs", "default"
};
RanksPerNode ranksPerNode(const DoctorOptions& options, const cluster::JobLayout& layout, int gpus);

// This node's CPUs as the kernel numbers them, read under `root` ("" for
// this machine; tests pass a folder they made): the online CPUs
// (/sys/devices/system/cpu/online) and, for each, the first CPU of its core
// (topology/thread_siblings_list), so that an affinity holding both
// hardware threads of a core counts as that core. A CPU whose siblings
// cannot be read is its own core; no online list gives an empty one.
struct CpuFacts {
  binding::CpuList online;
  std::vector<std::pair<int, int>> coreOf;  // (CPU, its core's first CPU), CPU order
};
CpuFacts readCpuFacts(const std::string& root);

// The cores (first CPU of each) that `cpus` touch, ascending.
binding::CpuList coresOf(const binding::CpuList& cpus, const CpuFacts& facts);

// The first line of `text`, trimmed; for tool errors in details.
std::string firstLine(const std::string& text);

}  // namespace distrun::doctor
