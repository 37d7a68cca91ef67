#include <fmt/format.h>

#include "distrun/common/strings.h"
#include "distrun/submit/batch_job.h"
#include "distrun/submit/job_status.h"

namespace distrun::submit {
namespace {

std::string quoted(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const std::string& a : argv) words.push_back(shellQuote(a));
  return join(words, " ");
}

void sbatchLine(std::string& out, const char* flag, const std::optional<std::string>& value) {
  if (value) out += fmt::format("#SBATCH --{}={}\n", flag, *value);
}

std::string sbatchLines(const BatchJob& job) {
  std::string out;
  sbatchLine(out, "job-name", job.jobName);
  sbatchLine(out, "nodes", std::to_string(job.nodes));
  sbatchLine(out, "ntasks-per-node", std::to_string(job.tasksPerNode));
  if (job.cpusPerTask) sbatchLine(out, "cpus-per-task", std::to_string(*job.cpusPerTask));
  if (job.gpusPerNode) sbatchLine(out, "gpus-per-node", std::to_string(*job.gpusPerNode));
  sbatchLine(out, "time", job.time);
  sbatchLine(out, "partition", job.partition);
  sbatchLine(out, "account", job.account);
  sbatchLine(out, "qos", job.qos);
  sbatchLine(out, "output", job.output);
  if (job.exclusive) out += "#SBATCH --exclusive\n";
  if (job.signalGrace > 0) {
    out += fmt::format("#SBATCH --signal=B:USR1@{}\n", job.signalGrace);
    out += "#SBATCH --requeue\n#SBATCH --open-mode=append\n";
  }
  for (const std::string& arg : job.sbatchArgs) {
    if (arg != "--exclusive" || !job.exclusive) out += fmt::format("#SBATCH {}\n", arg);
  }
  return out;
}

// The step's srun, ended by `end` (" &" to run it in the background).
std::string srunLine(const BatchJob& job, const char* end) {
  std::string line =
      fmt::format("srun --nodes={} --ntasks-per-node={}", job.nodes, job.tasksPerNode);
  if (job.cpusPerTask) line += fmt::format(" --cpus-per-task={}", *job.cpusPerTask);
  if (job.taskTakesTheNode) line += " --cpus-per-task=\"$SLURM_CPUS_ON_NODE\"";
  return line + fmt::format(" --cpu-bind={} \\\n  {}{}\n", job.cpuBind, quoted(job.step), end);
}

// The doctor's step: every node checked, one task per node holding it,
// before the command starts; a failure ends the job with its status.
std::string doctorLines(const BatchJob& job) {
  if (job.doctorStep.empty()) return "";
  return fmt::format(
      "# distrun doctor checks every node first; a failed check ends the job here.\n"
      "srun --nodes={} --ntasks-per-node=1 --cpus-per-task=\"$SLURM_CPUS_ON_NODE\" "
      "--cpu-bind=none \\\n  {} || exit $?\n",
      job.nodes, quoted(job.doctorStep));
}

// USR1 reaches this shell (B: in --signal) and goes on to the step; srun
// forwards it to every task. `wait` returns early when the trap runs, so
// the loop waits until the step has really ended.
std::string stepWithPreemption(const BatchJob& job) {
  std::string out = fmt::format(
      "# Slurm sends USR1 {} s before the time limit (and on preemption); the workers\n"
      "# write a snapshot and exit {}, and the job goes back in the queue to resume.\n",
      job.signalGrace, kCheckpointedExitCode);
  out += "step=\"\"\n";  // a warning before srun started has no step to pass to
  out += "trap '[[ -n $step ]] && kill -USR1 \"$step\" 2>/dev/null' USR1\n";
  out += srunLine(job, " &");
  out += "step=$!\n";
  out += "while kill -0 \"$step\" 2>/dev/null; do wait \"$step\"; done\n";
  out += "wait \"$step\"\nstatus=$?\n";
  return out;
}

// A program outside the protocol: no warning, no requeue; the step runs to
// its end or to the time limit, as under plain sbatch.
std::string stepToItsEnd(const BatchJob& job) {
  return "# Slurm sends no warning before the time limit: the program takes no part in\n"
         "# distrun's preemption protocol (distrun submit --checkpoint-on-warning).\n" +
         srunLine(job, "") + "exit $?\n";
}

std::string requeueOnCheckpoint(const BatchJob& job) {
  return fmt::format(
      "if [[ $status -eq {code} ]]; then\n"
      "  if [[ ${{SLURM_RESTART_COUNT:-0}} -lt {max} ]]; then\n"
      "    echo \"distrun submit: job $SLURM_JOB_ID wrote a snapshot on the warning signal: "
      "requeued (restart $((${{SLURM_RESTART_COUNT:-0}} + 1)) of {max})\"\n"
      "    scontrol requeue \"$SLURM_JOB_ID\"\n"
      "    exit 0\n"
      "  fi\n"
      "  echo \"distrun submit: job $SLURM_JOB_ID wrote a snapshot but was requeued {max} times "
      "already (--max-requeues): resubmit it to go on\"\n"
      "fi\n"
      "exit $status\n",
      fmt::arg("code", kCheckpointedExitCode), fmt::arg("max", job.maxRequeues));
}

// Where the node agent of `run` and `train` keeps the job's progress
// (job_status.h); other commands have no agent to keep it.
std::string statusFileLines(const BatchJob& job) {
  if (job.step.size() < 2 || (job.step[1] != "run" && job.step[1] != "train")) return "";
  std::optional<std::string> word = statusFileWord(job.output.value_or("slurm-%j.out"));
  if (!word) return "";
  return "# distrun keeps the job's progress here for distrun submit --wait.\n"
         "export DISTRUN_STATUS_FILE=" +
         *word + "\n";
}

}  // namespace

std::string batchScript(const BatchJob& job) {
  std::string out = "#!/bin/bash\n";
  out += fmt::format("# Written by distrun submit for: distrun {}\n",
                     quoted({job.step.begin() + 1, job.step.end()}));
  out += "# Submit it again by hand with: sbatch THIS_FILE\n";
  out += sbatchLines(job);
  out += "set -u\n";
  for (const auto& [name, value] : job.environment) {
    out += fmt::format("export {}={}\n", name, shellQuote(value));
  }
  out += statusFileLines(job);
  out += doctorLines(job);
  if (job.signalGrace > 0) {
    out += stepWithPreemption(job);
    out += requeueOnCheckpoint(job);
  } else {
    out += stepToItsEnd(job);
  }
  return out;
}

}  // namespace distrun::submit
