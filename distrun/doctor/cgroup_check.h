#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "distrun/binding/cpu_list.h"
#include "distrun/common/environment.h"
#include "distrun/doctor/check_result.h"

// Private to distrun/doctor: the "cgroup" check's facts, reader and judge
// (docs/doctor.md, "The node's system").

namespace distrun::doctor {

// The limits the kernel puts on this process through its control group.
struct CgroupFacts {
  int version = 0;   // 1 or 2; 0: no cgroup found (no /proc/self/cgroup)
  std::string path;  // the process's cgroup ("/slurm/uid_1000/job_12/step_0")
  // The CPUs the cgroup's cpuset allows (v2 cpuset.cpus.effective, v1
  // cpuset.effective_cpus or cpuset.cpus); nullopt when there is none.
  std::optional<binding::CpuList> cpus;
  // The CPU time quota in CPUs (quota / period), the tightest of the cgroup
  // and its ancestors (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us);
  // nullopt: no quota.
  std::optional<double> cpuQuota;
  // The memory limit in bytes, the tightest of the cgroup and its ancestors
  // (v2 memory.max, v1 memory.limit_in_bytes); nullopt: no limit.
  std::optional<uint64_t> memoryLimit;
};

// Reads the facts of this process from `root`/proc/self/cgroup and the
// cgroup files under `root`/sys/fs/cgroup ("" for this machine; tests pass
// a folder they made). v1 controllers are found in the folder named by
// their hierarchy's controller list (cpuset, "cpu,cpuacct", memory); v2 in
// the unified hierarchy when it holds cgroup.controllers. Never throws: a
// file that cannot be read is a limit that is not there.
CgroupFacts readCgroup(const std::string& root);

// What the job asked Slurm for on this node.
struct JobRequest {
  std::string jobId;        // SLURM_JOB_ID; empty: not in a Slurm job
  std::optional<int> cpus;  // SLURM_CPUS_ON_NODE
  // SLURM_MEM_PER_NODE MB, or SLURM_MEM_PER_CPU MB x SLURM_CPUS_ON_NODE.
  std::optional<uint64_t> memoryBytes;
  std::string memorySource;  // "SLURM_MEM_PER_NODE=4096" for the detail
};
JobRequest readJobRequest(const Environment& env);

// "cgroup": skip without a cgroup; fail when the cpuset or the CPU quota
// holds fewer CPUs, or the memory limit less memory, than the job asked for
// on this node; ok otherwise, naming the limits found.
CheckResult judgeCgroup(const CgroupFacts& facts, const JobRequest& request);

}  // namespace distrun::doctor
