#pragma once

#include <memory>
#include <string>
#include <vector>

#include "distrun/cluster/job_layout.h"
#include "distrun/common/environment.h"
#include "distrun/launch/agent_config.h"
#include "distrun/launch/worker.h"
#include "distrun/launch/worker_output.h"
#include "distrun/rdzv/rendezvous.h"

namespace distrun::launch {

// What the agent starts for each worker, derived from its AgentConfig and
// the rendezvous: plain functions of their arguments (the environment is
// read through `env` only). They throw what buildRankEnvironment and
// WorkerOutput throw (ConfigError, IoError).

// The global rank of the worker with `localRank` on this node: ranks are
// contiguous on a node, from the first one the rendezvous gave it.
int workerRank(const rdzv::World& world, int localRank);

// The layout of the worker with `localRank` on this node: the node's
// layout (nodes, node rank, workers per node, scheduler, devices) with the
// worker's place in the world the rendezvous agreed on (rank =
// world.firstRank + localRank, world size, MASTER_ADDR) and `cpus`, the
// number of CPUs it may use.
cluster::JobLayout workerLayout(const cluster::JobLayout& node, const rdzv::World& world,
                                int localRank, int cpus);

// The worker's whole environment as "NAME=value": every variable of `env`,
// overlaid with its rank environment (torchrun's contract, DISTRUN_STORE
// at storeHost:`storePort`, DISTRUN_TOKEN, DISTRUN_RUN_ID, and
// TORCHELASTIC_ERROR_FILE with a log folder).
std::vector<std::string> workerEnvironment(const AgentConfig& config, const rdzv::World& world,
                                           int storePort, int localRank, const Environment& env);

// The program, environment and cores of a worker: its entry of config.plan
// (--cpu-bind/--gpu-bind; its GPUs in config.gpuVisibilityVariable, and
// DISTRUN_LOCAL_DEVICE 0), else an even share of config.cpus.
// Creates the site profile's node folders its environment names
// (cluster::makeNodeDirs), as `distrun exec` does: IoError otherwise.
WorkerSpec workerSpec(const AgentConfig& config, const rdzv::World& world, int storePort,
                      int localRank, const Environment& env);

// The folder of round `round`'s files under `root` (torchrun's layout, the
// round being the restart count): <root>/<run-id>/attempt_<round>.
std::string attemptFolder(const std::string& root, const AgentConfig& config, int round);

// The folder of a worker's log files in round `round`:
// <log-dir>/<run-id>/attempt_<round>/<local>.
std::string workerLogFolder(const AgentConfig& config, int round, int localRank);

// Local rank `localRank`'s TORCHELASTIC_ERROR_FILE in round `round`, a
// fresh path per rank and restart under config.errorRoot:
// ROOT/RUN_ID/attempt_ROUND/LOCAL_RANK/error.json. Empty without a root.
std::string workerErrorFile(const AgentConfig& config, int round, int localRank);

// A new folder private to this user and run, ${TMPDIR:-/tmp}/distrun-UID/
// run-XXXXXX (torchrun's per-run temporary log folder). Throws ConfigError
// or SystemError naming the folder when it cannot be made.
std::string privateRunFolder(const Environment& env);

// Where a worker's output goes: prefixed console lines and, with a log
// folder or --redirects/--tee, <log-dir>/<run-id>/attempt_<round>/<local>/.
std::unique_ptr<WorkerOutput> workerOutput(const AgentConfig& config, int round, int rank,
                                           int localRank);

}  // namespace distrun::launch
