#pragma once

#include <optional>
#include <string>
#include <vector>

#include "distrun/cluster/site_profile.h"
#include "distrun/submit/batch_job.h"

namespace distrun::submit {

// What the user asked `distrun submit` for, in Slurm's words (docs/submit.md).
struct SubmitRequest {
  std::vector<std::string> command;  // after --: a distrun command and its arguments
  int nodes = 1;
  std::optional<int> nprocPerNode;
  std::optional<int> gpusPerNode;
  std::optional<int> cpusPerTask;
  std::optional<std::string> time;
  std::optional<std::string> partition;
  std::optional<std::string> account;
  std::optional<std::string> qos;
  std::optional<std::string> jobName;
  std::optional<std::string> output;
  std::vector<std::string> sbatchArgs;
  // --signal-grace: seconds of warning before the limit; nullopt: the
  // default (kDefaultSignalGrace, at most half the limit).
  std::optional<int> signalGrace;
  // --checkpoint-on-warning: the program takes part in the preemption
  // protocol (writes a snapshot on SIGUSR1, exits 79); distrun-train
  // always does.
  bool checkpointOnWarning = false;
  int maxRequeues = 3;
  // --doctor: `distrun doctor` on every node before the command's step.
  bool doctor = false;
  // --doctor-arg: flags added to that step's `distrun doctor`, as given.
  std::vector<std::string> doctorArgs;
  std::string distrun = "distrun";  // the path the script runs distrun by
};

// The commands a batch job can run, and how many Slurm tasks each wants per
// node: one distrun per node for run, train and bench (it starts the
// node's ranks), one task per rank for exec.
bool runsOneTaskPerRank(const std::string& command);

// Decides the job: the task geometry from the command, the ranks per node
// (--nproc-per-node of submit or of the command, else the site's GPUs per
// node, else 1), the site's defaults for what the user left out, and, when
// the site describes its node type, the binding of exec's tasks
// (binding_plan.h). UsageError naming the flag for a request that
// contradicts itself or the node (--doctor-arg without --doctor too).
BatchJob planBatchJob(const SubmitRequest& request, const cluster::SiteProfile* site);

// Seconds of warning a program that takes part in the protocol gets when
// --signal-grace is not given (at most half the time limit).
constexpr int kDefaultSignalGrace = 120;

// Whether the job's program takes part in the preemption protocol: `train`
// (distrun-train), or any command given --checkpoint-on-warning. Only such
// a job asks Slurm for the warning signal and is requeueable.
bool takesTheWarning(const SubmitRequest& request);

// A note for a request whose --signal-grace cannot take effect (its program
// takes no part in the protocol), or nullopt.
std::optional<std::string> warningNote(const SubmitRequest& request);

// What `--explain` prints: the binding plan of every rank on every node as
// a table (the site's node description; nodes are "(node 0)"... until the
// job has them), or one line saying why it is planned on the nodes instead.
std::string explainBinding(const BatchJob& job, const cluster::SiteProfile* site);

}  // namespace distrun::submit
