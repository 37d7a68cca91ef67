#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distrun/binding/agent_gpus.h"
#include "distrun/common/environment.h"
#include "distrun/common/system.h"

namespace distrun::cluster {

// Who started this process.
enum class Scheduler { kStandalone, kSlurm, kOpenMpi, kMpich, kPbs };

std::string schedulerName(Scheduler scheduler);

// Where this task sits in its job: the scheduler's own ids, checked against
// each other, never positions in a hostlist. A plain value; copyable.
struct JobLayout {
  Scheduler scheduler = Scheduler::kStandalone;
  int rank = 0;            // global task id (SLURM_PROCID, OMPI_COMM_WORLD_RANK)
  int worldSize = 1;       // tasks in the job step
  int localRank = 0;       // id among the tasks on this node
  int localWorldSize = 1;  // tasks on this node
  int nodeRank = 0;        // this node's id in the step (SLURM_NODEID)
  int numNodes = 1;        // nodes in the step
  // Node names in node-id order, when the scheduler tells them.
  std::vector<std::string> hosts;
  // The host that runs rank 0, as other tasks should reach it.
  std::string masterHost;
  // Job and step ids (may be empty), used for the run id and the port.
  std::string jobId;
  std::string stepId;
  std::optional<int> cpusPerTask;  // SLURM_CPUS_PER_TASK
  // GPU ids this task may use, and the variable they came from.
  std::vector<std::string> visibleDevices;
  std::string visibleDevicesVariable;
  // Remarks for the user: what was assumed, what looks odd.
  std::vector<std::string> notes;
};

// The run id a job gets when the user names none: "JOBID.STEPID", "JOBID",
// or "none" without a job id (torchrun's default).
std::string defaultRunId(const JobLayout& layout);

// The GPU ids this process may use (binding/agent_gpus.h).
using binding::readVisibleDevices;

// Reads the layout from the environment. Precedence, innermost launcher
// first: Open MPI (OMPI_COMM_WORLD_*), a Slurm step task (SLURM_PROCID with
// SLURM_STEP_ID), MPICH/Hydra (PMI_RANK), PBS (PBS_JOBID), then
// standalone. Throws ConfigError naming the variables it read when they
// contradict each other or are malformed, ending with how to clear stale
// ones (kClearStaleHint); IoError when PBS_NODEFILE cannot be read.
JobLayout detectJobLayout(const Environment& env, const HostFacts& host);

// The detectors, each for one scheduler; nullopt when its variables are
// absent. Exposed for tests.
std::optional<JobLayout> detectSlurm(const Environment& env, const HostFacts& host);
std::optional<JobLayout> detectOpenMpi(const Environment& env, const HostFacts& host);
std::optional<JobLayout> detectMpich(const Environment& env, const HostFacts& host);
std::optional<JobLayout> detectPbs(const Environment& env, const HostFacts& host);
JobLayout detectStandalone(const Environment& env, const HostFacts& host);

namespace detail {

// Reads an integer variable; ConfigError naming it when malformed.
std::optional<int> readInt(const Environment& env, const std::string& name);
// Like readInt, but a missing variable is a ConfigError too.
int requireInt(const Environment& env, const std::string& name);
// Like requireInt, for a variable that must come with `setName`, which is
// set: a missing one is "SETNAME=V is set but NAME is not".
int requireWith(const Environment& env, const std::string& name, const std::string& setName);
// The first of `names` that is set.
std::optional<std::string> firstOf(const Environment& env, const std::vector<std::string>& names);
// Fills layout.visibleDevices with readVisibleDevices(env).
void readVisibleDevices(const Environment& env, JobLayout& layout);
// Throws ConfigError unless 0 <= value < bound, naming both variables.
void checkBelow(int value, const std::string& valueName, int bound, const std::string& boundName);
// expandHostlist(list), its errors prefixed with the variable `name`.
std::vector<std::string> hostsOf(const std::string& name, const std::string& list);
// The hosts of an enclosing allocation (Slurm job or PBS node file), if any.
std::vector<std::string> allocationHosts(const Environment& env);

}  // namespace detail

}  // namespace distrun::cluster
