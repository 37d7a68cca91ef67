#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distrun/common/exit_code.h"

namespace distrun::submit {

// Everything a `distrun submit` batch script says, decided: Slurm's request
// (#SBATCH lines), the step that runs the distrun command, and the
// preemption protocol. Made by planBatchJob (submit_plan.h) from the
// user's flags and the site profile; written by batchScript.
struct BatchJob {
  std::string jobName;
  int nodes = 1;
  int tasksPerNode = 1;             // 1 for run/train/bench (one distrun per node), ranks for exec
  std::optional<int> ranksPerNode;  // nullopt: the command's "gpu"/"auto", decided on the node
  std::optional<int> cpusPerTask;
  std::optional<int> gpusPerNode;
  std::optional<std::string> time;  // as sbatch takes it, D-HH:MM:SS
  std::optional<std::string> partition;
  std::optional<std::string> account;
  std::optional<std::string> qos;
  std::optional<std::string> output;
  // Whole nodes: the binding masks name every core of the node, which a
  // shared allocation may not hold.
  bool exclusive = false;
  // The one task per node (run, train, bench) gets every CPU of the node:
  // srun --cpus-per-task=$SLURM_CPUS_ON_NODE, for distrun to share out.
  bool taskTakesTheNode = false;
  std::vector<std::string> sbatchArgs;  // passed through, one #SBATCH line each
  // Seconds of warning (SIGUSR1) before the end, for a program that takes
  // part in the preemption protocol; 0: no warning, no requeue, the job
  // runs to its limit as under plain sbatch.
  int signalGrace = 0;
  int maxRequeues = 3;
  std::string cpuBind = "none";                                  // srun --cpu-bind
  std::vector<std::pair<std::string, std::string>> environment;  // exported before the step
  std::vector<std::string> step;  // the distrun command the step runs, argv
  // `distrun doctor` and its flags, run as a step of its own (one task per
  // node, holding the node) before `step`; its failure ends the job with
  // its exit status. Empty: none (submit without --doctor).
  std::vector<std::string> doctorStep;
};

// The exit status by which a worker (distrun-train, or any program joining
// the protocol) says "I wrote a snapshot on the warning signal: requeue me".
// docs/submit.md documents it; its one home is ExitCode::kCheckpointed.
constexpr int kCheckpointedExitCode = toInt(ExitCode::kCheckpointed);

// The batch script: readable, byte-stable for the same job, and usable by
// hand (`sbatch job.sh`). Arguments are shell-quoted.
std::string batchScript(const BatchJob& job);

}  // namespace distrun::submit
