#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distrun/binding/node_topology.h"
#include "distrun/common/environment.h"
#include "distrun/common/python_choice.h"
#include "distrun/common/system.h"
#include "distrun/container/container_request.h"
#include "distrun/launch/agent.h"

namespace distrun::launch {

// `distrun run`'s flags as the user gave them (torchrun's names; see
// docs/launcher.md). Unset optionals take the defaults the resolution below
// picks from the scheduler.
struct RunOptions {
  std::optional<std::string> nnodes;  // "N" or "MIN:MAX"
  std::string nprocPerNode = "1";     // N, cpu, gpu, auto
  std::optional<int> nodeRank;
  std::optional<std::string> masterAddr;
  std::optional<int> masterPort;
  std::optional<std::string> rdzvEndpoint;  // host[:port]
  std::optional<std::string> rdzvId;
  std::string rdzvConf;  // k=v,k=v
  bool standalone = false;
  int maxRestarts = 0;
  std::string role = "default";
  bool module = false;
  bool noPython = false;
  bool runPath = false;
  // torchrun's rule, through the torchrun link: PROGRAM runs under Python
  // whatever its name, unless --no-python. Otherwise only a .py PROGRAM does.
  bool pythonByDefault = false;
  std::optional<std::string> logDir;
  std::string redirects = "0";
  std::string tee = "0";
  std::optional<std::string> localRanksFilter;
  std::optional<std::string> localAddr;
  std::optional<std::string> python;
  double termTimeout = 25;
  double hangTimeout = 0;  // seconds without progress before a worker is hung; 0: off
  std::optional<double> joinTimeout;
  std::string logPrefix = "[{node}:{rank}] ";
  // torchrun's --log-line-prefix-template (${rank} ...), over logPrefix.
  std::optional<std::string> logLinePrefixTemplate;
  std::string cpuBind = "cores";       // none | cores | numa | site | mask:LIST
  std::optional<std::string> gpuBind;  // closest | none | map:LIST; unset: closest
  bool virtualLocalRank = false;       // torchrun 2.x --virtual-local-rank
  // torchrun 2.x's --signals-to-handle: passed on in the workers'
  // TORCHELASTIC_SIGNALS_TO_HANDLE (torchrun's default when unset).
  std::string signalsToHandle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";
  // torchrun 2.x's --duplicate-stdout-filters / --duplicate-stderr-filters.
  std::string duplicateStdoutFilters;
  std::string duplicateStderrFilters;
  std::optional<std::string> printCompletion;  // torchrun's --print-completion bash|zsh|tcsh
  bool explain = false;                        // print the binding plan, start nothing
  std::optional<std::string> site;
  std::string status = "auto";          // --status: auto | line | plain | none
  bool verbose = false;                 // -v: the workers' command first
  container::ContainerFlags container;  // --container, --bind, --container-runtime
  std::vector<std::string> program;     // PROGRAM [ARGS...]
  // Variables set for the agent and every worker, over the user's
  // (`distrun train --trace`: DISTRUN_TRACE*).
  std::map<std::string, std::string> environment;
};

// Everything `resolveAgentConfig` reads besides the flags.
struct RunContext {
  const Environment& env;
  HostFacts host;
  std::vector<int> cpus;
  std::string builtinSiteDir;
  int gpus = 0;  // devices on this node, for --nproc-per-node gpu/auto
  // This node's topology for --cpu-bind/--gpu-bind (readNodeTopology);
  // unset: a GPU-less node of `cpus`.
  std::optional<binding::NodeTopology> topology;
  // stdout and stderr are a terminal (consoleIsTerminal): --status auto
  // draws a status line there.
  bool terminal = false;
};

// The --cpu-bind and --gpu-bind checks made before anything starts: the
// values parse, a mask:LIST or map:LIST has one entry per worker (when
// --nproc-per-node is a number) and its masks name only ctx.cpus, a map
// has GPUs to name, and `site` has a profile with `node` lines. UsageError
// naming the flag.
void checkBindOptions(const RunOptions& options, const RunContext& ctx);

// UsageError "run: no PROGRAM given: ..." for options without a program;
// what `distrun submit` checks of a job's `run` before sbatch.
void checkProgramGiven(const RunOptions& o);

// The checks that need neither the host nor the filesystem, made before
// anything starts (`distrun run` makes them before the agent, and
// resolveAgentConfig again): a PROGRAM is given, --rdzv-conf is key=value
// pairs, --standalone is not contradicted by a flag placing
// the store or the node, and distrun run is not one of several tasks of an
// mpirun job (`layout`, the scheduler's) without flags that place the
// nodes, --hang-timeout is 0 or at least 1 second, and --status is one
// of auto, line, plain, none. Throws UsageError
// naming the flag or variable.
void checkRunOptions(const RunOptions& options, const cluster::JobLayout& layout);

// One note per --rdzv-conf key that neither torchrun's c10d or static
// rendezvous nor distrun reads: the key is ignored, as torchrun ignores it,
// with the nearest known key when it looks like a typo.
std::vector<std::string> rdzvConfNotes(const std::string& conf);

// Decides the node's role, the store, the token and the workers' command.
// Standalone (--standalone, or one node and no scheduler): a private store
// on 127.0.0.1 and a random token. --nnodes 1 with --rdzv-endpoint (or
// --master-addr): the same, the store at the endpoint's port. Under a Slurm step with one task per
// node and no --nnodes: nodes, node rank and store come from SLURM_*.
// Otherwise --nnodes/--node-rank with --rdzv-endpoint or --master-addr/
// --master-port. Throws UsageError for flags that contradict each other or
// the scheduler, naming them.
AgentConfig resolveAgentConfig(const RunOptions& options, const RunContext& ctx);

// The Python of a Python PROGRAM and where it came from: the one rule of
// python_choice.h with the options' --python.
PythonChoice choosePython(const RunOptions& options, const Environment& env);

// Whether PROGRAM runs under Python: a .py file (unless --no-python),
// -m MODULE or --run-path.
bool runsUnderPython(const RunOptions& options);

// The worker command: PROGRAM run directly, or under choosePython's
// interpreter for a .py file, -m MODULE or --run-path (with -u, as torchrun).
std::vector<std::string> workerCommand(const RunOptions& options, const Environment& env);

// A random 128-bit hex string (distrun::randomHex).
std::string randomHex();

}  // namespace distrun::launch
