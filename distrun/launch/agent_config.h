#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "distrun/binding/binding_plan.h"
#include "distrun/cluster/job_layout.h"
#include "distrun/cluster/site_profile.h"
#include "distrun/common/live_line.h"

namespace distrun::launch {

// A job whose nodes meet by arrival (docs/launcher.md, "Elastic jobs"):
// `--nnodes MIN:MAX`, or `--nnodes N` without --node-rank outside Slurm.
// Node ranks come from the order of arrival (Slurm's node ids when every
// node has one); the job runs on MIN to MAX nodes and re-forms when a node
// is lost or one waits to join.
struct ElasticSpec {
  int minNodes = 1;
  int maxNodes = 1;
  // After MIN nodes have joined a round, how long it waits for more (up to
  // MAX); --rdzv-conf last_call_timeout.
  std::chrono::milliseconds lastCall{std::chrono::seconds(5)};
  std::string nodeName;                  // this node in reports: its address
  std::optional<int> preferredNodeRank;  // Slurm's SLURM_NODEID
  std::string preferredRankScope{};      // its step, "JOBID.STEPID"
};

// Everything one node's agent needs, resolved from flags and scheduler by
// resolveAgentConfig (run_options.h). A plain value.
struct AgentConfig {
  // This node's place in the job, the one home of these numbers:
  // numNodes, nodeRank (in an elastic job: the current round's, see
  // inRound), localWorldSize (workers on this node), the
  // scheduler, job and step ids, hosts, visible devices. The worker
  // fields (rank, worldSize, localRank, masterHost, cpusPerTask) are
  // filled per worker by workerLayout (worker_setup.h) from the
  // rendezvous.
  cluster::JobLayout layout;
  // This node's address as other nodes and workers reach it: --local-addr,
  // else the scheduler's name for it, else the hostname. The layout only
  // has the scheduler's names, which --local-addr overrides.
  std::string host;
  // This node as reports and the {host} prefix name it: the scheduler's
  // name for it, else the hostname (never a loopback address); with
  // --local-addr, reports add that address (nodeWithAddress).
  std::string nodeName;
  std::string storeHost = "127.0.0.1";  // node 0's store, as agents reach it
  int storePort = 0;                    // 0: node 0 picks (one node only)
  std::string token;
  std::string runId;
  std::vector<std::string> program;  // full argv of each worker
  // For a Python PROGRAM: the interpreter (program[0]; an absolute path
  // once locateProgram found it), where it came from ("the first python3
  // on PATH", "from --python", "from DISTRUN_PYTHON"), for -v and the
  // failure report, and the script (empty for -m). Empty otherwise.
  std::string python;
  std::string pythonSource;
  std::string pythonScript;
  int maxRestarts = 0;
  std::chrono::milliseconds joinTimeout{std::chrono::seconds(300)};
  std::chrono::milliseconds termTimeout{std::chrono::seconds(25)};
  std::chrono::milliseconds hangTimeout{0};  // --hang-timeout; 0: off
  std::string role = "default";
  std::string logPrefix = "[{node}:{rank}] ";
  std::string logDir;  // empty: no per-rank files
  // -r/-t without --log-dir: the files go to a fresh folder private to the
  // user and the run (the agent makes it: privateRunFolder), kept.
  bool logDirIsPrivate = false;
  // Where the workers' TORCHELASTIC_ERROR_FILEs go: logDir, else a private
  // run folder the agent makes and removes when the job ends. Empty: none
  // could be made (the workers get no error file).
  std::string errorRoot;
  std::map<int, int> redirects;  // parseStreamSpec
  std::map<int, int> tee;
  std::optional<std::set<int>> consoleRanks;  // --local-ranks-filter
  std::vector<int> cpus;                      // this node's usable CPUs (the agent's affinity)
  // Each local rank's cores (empty: no affinity) and GPU (device -1: none),
  // from --cpu-bind/--gpu-bind (bindRanks). A worker missing from it gets an
  // even share of `cpus`.
  std::vector<binding::RankBinding> plan;
  // The agent's GPUs as its workers see them (AgentGpus::ids), and the
  // variable that lists them: the inherited one, else the site's, else
  // CUDA_VISIBLE_DEVICES.
  std::vector<std::string> gpuIds;
  std::string gpuVisibilityVariable = "CUDA_VISIBLE_DEVICES";
  // torchrun 2.x's --virtual-local-rank: each worker sees only its GPU, as
  // device 0, with LOCAL_RANK=0.
  bool virtualLocalRank = false;
  std::string signalsToHandle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";  // --signals-to-handle
  // --duplicate-stdout-filters/--duplicate-stderr-filters (FilteredCopy):
  // empty, none.
  std::vector<std::string> stdoutFilters;
  std::vector<std::string> stderrFilters;
  std::optional<cluster::SiteProfile> site;
  std::optional<ElasticSpec> elastic;  // unset: fixed node ranks (--node-rank, Slurm)
  // The live status line (--status, resolved: kLine on a terminal) and the
  // file the agent that sees rank 0 keeps its status in (DISTRUN_STATUS_FILE;
  // empty: none). docs/observability.md, "Live progress".
  StatusMode status = StatusMode::kNone;
  std::string statusFile;
};

// This node in a report: "gpu04", or "gpu04 at 10.0.0.2" when --local-addr
// gave an address other than its name (a loopback address is never named:
// "node 0 (vm)", not "node 0 (127.0.0.1)").
inline std::string nodeWithAddress(const AgentConfig& c) {
  if (c.nodeName.empty()) return c.host;
  const bool loopback = c.host.rfind("127.", 0) == 0 || c.host == "::1" || c.host == "localhost";
  if (c.host == c.nodeName || loopback) return c.nodeName;
  return c.nodeName + " at " + c.host;
}

}  // namespace distrun::launch
