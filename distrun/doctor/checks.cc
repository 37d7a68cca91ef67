#include "distrun/doctor/checks.h"

namespace distrun::doctor {

const std::vector<Check>& nodeChecks() {
  static const std::vector<Check> checks = {
      {"scheduler", "the scheduler's variables agree: node list, task counts, distrun env",
       checkScheduler},
      {"hostnames", "every node of the job resolves from this node", checkHostnames},
      {"master-port", "MASTER_PORT is free on the master node", checkMasterPort},
      {"cpu-binding", "the task's CPUs hold the binding plan's cores", checkCpuBinding},
      {"cgroup", "the cgroup's CPU and memory limits hold what the job asked for", checkCgroup},
      {"shm", "/dev/shm is large enough for shared-memory collectives and data loaders",
       checkSharedMemory},
      {"limits", "locked-memory and open-file limits", checkLimits},
      {"tmpdir", "$TMPDIR is writable and has room", checkTmpdir},
      {"snapshot-dir", "the --snapshot folder is writable and has room", checkSnapshotDir},
      {"network", "the interfaces NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME name are up",
       checkNetwork},
      {"gpu", "the visible GPUs match the plan, answer, and are not in use", checkGpus},
      {"python", "python3 imports torch", checkPython},
      {"matmul", "a single-core matrix multiply's time", checkMatmul, /*runsAlone=*/true},
  };
  return checks;
}

const std::vector<JobCheck>& jobChecks() {
  static const std::vector<JobCheck> checks = {
      {"answer", "every task reported to rank 0 in time"},
      {"clock", "the node's clock against rank 0's node"},
      {"torch-version", "the same torch version on every node"},
      {"straggler", "no node's matmul far slower than the median"},
      {"allreduce", "bus bandwidth among the nodes (--min-busbw)"},
  };
  return checks;
}

std::vector<std::string> allCheckNames() {
  // The report's order: can the nodes meet, is each node set up, does the
  // software work, are they fast.
  return {"answer", "scheduler", "hostnames",     "master-port", "clock",        "cpu-binding",
          "cgroup", "shm",       "limits",        "tmpdir",      "snapshot-dir", "network",
          "gpu",    "python",    "torch-version", "matmul",      "straggler",    "allreduce"};
}

namespace {
CheckResult result(const std::string& check, CheckState state, const std::string& detail,
                   const std::string& fix) {
  CheckResult r;
  r.check = check;
  r.state = state;
  r.detail = detail;
  r.fix = fix;
  return r;
}
}  // namespace

CheckResult ok(const std::string& check, const std::string& detail) {
  return result(check, CheckState::kOk, detail, "");
}
CheckResult skip(const std::string& check, const std::string& reason) {
  return result(check, CheckState::kSkip, reason, "");
}
CheckResult warn(const std::string& check, const std::string& detail, const std::string& fix) {
  return result(check, CheckState::kWarn, detail, fix);
}
CheckResult fail(const std::string& check, const std::string& detail, const std::string& fix) {
  return result(check, CheckState::kFail, detail, fix);
}

}  // namespace distrun::doctor
