#pragma once

#include <functional>
#include <string>
#include <vector>

#include "distrun/doctor/check_result.h"
#include "distrun/doctor/probe_context.h"

namespace distrun::doctor {

// One named check that a node runs on itself (docs/doctor.md lists each).
// A check never throws on purpose: what it finds is its result. An Error
// that escapes anyway becomes a fail result with its message (runChecks).
struct Check {
  std::string name;  // as --checks and the report name it: "tmpdir"
  std::string what;  // one line for `distrun doctor --list`
  std::function<CheckResult(const ProbeContext&)> run;
  // Runs alone after the others, on an idle node (timings).
  bool runsAlone = false;
};

// The checks every node runs, in report order.
const std::vector<Check>& nodeChecks();

// A check made across nodes (by rank 0, or by each node against rank 0):
// its name and one line for `distrun doctor --list`.
struct JobCheck {
  std::string name;
  std::string what;
};

// The checks across nodes: "answer" (the node reported), "clock" (skew
// against rank 0's node), "torch-version" (the same on every node),
// "straggler" (matmul against the median), "allreduce" (bus bandwidth
// among the nodes).
const std::vector<JobCheck>& jobChecks();

// Every check name --checks accepts, in the report's order (node and job
// checks mixed: "clock" after "master-port", "allreduce" last).
std::vector<std::string> allCheckNames();

// A result for `check` on the node of `ctx`. Shorthands for the checks.
CheckResult ok(const std::string& check, const std::string& detail);
CheckResult skip(const std::string& check, const std::string& reason);
CheckResult warn(const std::string& check, const std::string& detail, const std::string& fix);
CheckResult fail(const std::string& check, const std::string& detail, const std::string& fix);

// --- the node checks, one function each (their files say what they read) ---

// scheduler_checks.cc
CheckResult checkScheduler(const ProbeContext& ctx);   // "scheduler"
CheckResult checkHostnames(const ProbeContext& ctx);   // "hostnames"
CheckResult checkMasterPort(const ProbeContext& ctx);  // "master-port"
// binding_check.cc, cgroup_check.cc
CheckResult checkCpuBinding(const ProbeContext& ctx);  // "cpu-binding"
CheckResult checkCgroup(const ProbeContext& ctx);      // "cgroup"
// limits_checks.cc
CheckResult checkSharedMemory(const ProbeContext& ctx);  // "shm"
CheckResult checkLimits(const ProbeContext& ctx);        // "limits"
CheckResult checkTmpdir(const ProbeContext& ctx);        // "tmpdir"
CheckResult checkSnapshotDir(const ProbeContext& ctx);   // "snapshot-dir"
// network_check.cc, gpu_check.cc
CheckResult checkNetwork(const ProbeContext& ctx);  // "network"
CheckResult checkGpus(const ProbeContext& ctx);     // "gpu"
// python_check.cc, matmul_check.cc
CheckResult checkPython(const ProbeContext& ctx);  // "python"
CheckResult checkMatmul(const ProbeContext& ctx);  // "matmul"

}  // namespace distrun::doctor
