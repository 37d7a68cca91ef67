#pragma once

#include <functional>
#include <optional>

#include "distrun/cluster/job_layout.h"
#include "distrun/cluster/rank_env.h"
#include "distrun/cluster/site_profile.h"
#include "distrun/common/environment.h"
#include "distrun/common/system.h"

namespace distrun::cluster {

// Where a task that is alone in its world (WORLD_SIZE 1) hosts its store.
enum class LoneTaskStore {
  // As any task does: MASTER_ADDR and MASTER_PORT as the user set them,
  // else rank 0's host and the port derived from the job id (a free port
  // without one). What `distrun exec` and `distrun env` give.
  kAsAnyTask,
  // 127.0.0.1 and a port free now, replacing any set: no other process will
  // ever join it, so it must not take a port a job or the user shares
  // (`distrun-train` run by hand, in a batch script or an salloc shell).
  kPrivate,
};

// What differs between the commands that ask "which task am I".
struct ThisTaskOptions {
  // The site profile whose settings the task gets (`distrun exec`, `env`);
  // none: the torchrun contract alone.
  std::optional<SiteProfile> site;
  LoneTaskStore loneTaskStore = LoneTaskStore::kAsAnyTask;
  // A port free at this moment (for a world of one without a job id).
  std::function<int()> pickFreePort = pickFreeTcpPort;
};

// This task: where it sits in its job and the environment that tells its
// program so. A plain value; copyable.
struct ThisTask {
  JobLayout layout;
  RankEnvironment environment;

  // The environment's variables alone, name to value, to lay over the
  // process's own environment.
  MapEnvironment variables() const;
};

// The one answer to "which task am I", for `distrun exec`, `distrun env`,
// and `distrun-train` and `distrun bench` when srun or mpirun started them
// bare: detects the layout from `env` (detectJobLayout) and builds the rank
// environment (buildRankEnvironment; OMP_NUM_THREADS from
// host.usableCpus). Throws ConfigError naming the variables that contradict
// each other or are malformed, or when a world of several has neither
// MASTER_PORT nor a job id; IoError when PBS_NODEFILE cannot be read;
// SystemError when no free port can be had.
ThisTask thisTask(const Environment& env, const HostFacts& host,
                  const ThisTaskOptions& options = {});

}  // namespace distrun::cluster
