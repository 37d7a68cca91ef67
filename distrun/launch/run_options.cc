#include "distrun/launch/run_options.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "distrun/binding/bind_flags.h"
#include "distrun/cluster/master_port.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/user_secret.h"
#include "distrun/launch/worker_output.h"

namespace distrun::launch {

namespace {

using std::chrono::milliseconds;

constexpr int kDefaultRdzvPort = 29400;  // torchrun's c10d default

milliseconds seconds(double s) { return milliseconds(static_cast<long long>(s * 1000)); }

// --nnodes N or MIN:MAX.
struct NodeRange {
  int min = 1;
  int max = 1;
  bool elastic() const { return min < max; }
};

NodeRange parseNodes(const std::optional<std::string>& value) {
  if (!value) return {};
  std::vector<std::string> parts = split(*value, ':');
  try {
    if (parts.size() <= 2) {
      int min = static_cast<int>(parseCount(parts[0], "--nnodes"));
      int max = parts.size() == 2 ? static_cast<int>(parseCount(parts[1], "--nnodes")) : min;
      if (min >= 1 && max >= min) return {min, max};
    }
  } catch (const ConfigError&) {
    // not a number: said below
  }
  throw UsageError(
      fmt::format("--nnodes {}: expected a node count N, or MIN:MAX with 1 <= MIN <= MAX", *value));
}

int parseNproc(const std::string& value, const RunContext& ctx) {
  int cpus = std::max(static_cast<int>(ctx.cpus.size()), 1);
  if (value == "cpu") return cpus;
  if (value == "auto") return ctx.gpus > 0 ? ctx.gpus : cpus;
  if (value == "gpu" || value == "xpu") {
    if (ctx.gpus == 0) {
      throw UsageError(fmt::format("--nproc-per-node {}: this node has no visible GPU", value));
    }
    return ctx.gpus;
  }
  try {
    int n = static_cast<int>(parseCount(value, "--nproc-per-node", 4096));
    if (n > 0) return n;
  } catch (const ConfigError&) {
  }
  throw UsageError(
      fmt::format("--nproc-per-node {}: expected a positive number, cpu, gpu, xpu or auto", value));
}

// torchrun's --rdzv-conf keys (its c10d and static rendezvous): distrun
// reads join_timeout and last_call_timeout; the others are accepted for
// torchrun's recipes and have no effect.
const std::vector<std::string> kRdzvConfKeys = {"join_timeout",        "last_call_timeout",
                                                "close_timeout",       "heartbeat_timeout",
                                                "keep_alive_interval", "keep_alive_max_attempt",
                                                "read_timeout",        "is_host",
                                                "use_libuv",           "timeout",
                                                "store_type"};

// --rdzv-conf key=value,...: torchrun takes any key, and so does distrun
// (rdzvConfNotes names those nobody reads).
std::map<std::string, std::string> parseRdzvConf(const std::string& conf) {
  std::map<std::string, std::string> pairs;
  for (const std::string& pair : split(conf, ',')) {
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    if (eq == std::string::npos) {
      throw UsageError(fmt::format("--rdzv-conf '{}': expected key=value pairs", conf));
    }
    pairs[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  return pairs;
}

// A --rdzv-conf key holding seconds: join_timeout, last_call_timeout.
std::optional<double> secondsFrom(const std::string& conf, const std::string& key) {
  const std::map<std::string, std::string> pairs = parseRdzvConf(conf);
  const auto value = pairs.find(key);
  if (value == pairs.end()) return std::nullopt;
  return static_cast<double>(parseCount(value->second, "--rdzv-conf " + key));
}

std::pair<std::string, int> splitEndpoint(const std::string& endpoint, int defaultPort) {
  size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) return {endpoint, defaultPort};
  return {endpoint.substr(0, colon),
          static_cast<int>(parseCount(endpoint.substr(colon + 1), "--rdzv-endpoint port", 65535))};
}

bool inSlurmStep(const cluster::JobLayout& l) {
  return l.scheduler == cluster::Scheduler::kSlurm && l.stepId != "batch" &&
         l.stepId != "interactive";
}

// The token every agent of a Slurm step derives alike: DISTRUN_TOKEN, else
// the keyed hash of the job and the step with the user's secret, which
// nobody else can compute (docs/security.md).
std::string slurmToken(const cluster::JobLayout& l, const Environment& env) {
  if (auto token = env.get("DISTRUN_TOKEN")) return *token;
  return derivedToken(env, fmt::format("slurm:{}:{}", l.jobId, l.stepId));
}

void placeStandalone(const RunOptions& o, const RunContext& ctx, AgentConfig& c) {
  c.layout.numNodes = 1;
  c.layout.nodeRank = 0;
  c.storeHost = "127.0.0.1";
  c.storePort = 0;
  c.host = o.localAddr.value_or("127.0.0.1");
  c.token = ctx.env.getOr("DISTRUN_TOKEN", randomHex());
  c.runId = o.rdzvId.value_or(randomHex().substr(0, 12));
}

// One node, whatever the other flags say (torchrun's --nnodes=1 recipes
// with an endpoint): no other agent joins, so it needs neither --node-rank
// nor DISTRUN_TOKEN. It hosts its store itself on 127.0.0.1, at the port
// of --rdzv-endpoint (or --master-port) when one is given.
void placeOneNode(const RunOptions& o, const RunContext& ctx, AgentConfig& c) {
  if (o.nodeRank.value_or(0) != 0) {
    throw UsageError(fmt::format(
        "--node-rank {} contradicts --nnodes 1: expected 0 <= node rank < nodes", *o.nodeRank));
  }
  placeStandalone(o, ctx, c);
  if (o.rdzvEndpoint) {
    c.storePort = splitEndpoint(*o.rdzvEndpoint, kDefaultRdzvPort).second;
  } else if (o.masterAddr) {
    c.storePort = o.masterPort.value_or(29500);
  }
}

void placeFromSlurm(const RunOptions& o, const RunContext& ctx, AgentConfig& c) {
  const cluster::JobLayout& l = c.layout;
  if (l.localWorldSize != 1) {
    throw UsageError(
        fmt::format("distrun run must be the only task on its node, but this Slurm step "
                    "has {} tasks on node {}: use srun --ntasks-per-node=1 and "
                    "--nproc-per-node for the workers",
                    l.localWorldSize, l.hosts.at(static_cast<size_t>(l.nodeRank))));
  }
  auto [host, port] = splitEndpoint(o.rdzvEndpoint.value_or(l.hosts.front()),
                                    cluster::derivedMasterPort(l.jobId, l.stepId));
  c.storeHost = host;
  c.storePort = port;
  c.host = o.localAddr.value_or(l.hosts.at(static_cast<size_t>(l.nodeRank)));
  c.runId = o.rdzvId.value_or(cluster::defaultRunId(l));
  c.token = slurmToken(l, ctx.env);
}

// The store of a job of several nodes: --rdzv-endpoint, --master-addr and
// --master-port, else (in a Slurm step) the step's first host at the port
// derived from the job.
void placeStore(const RunOptions& o, const std::string& nodes, AgentConfig& c) {
  if (o.rdzvEndpoint) {
    std::tie(c.storeHost, c.storePort) = splitEndpoint(*o.rdzvEndpoint, kDefaultRdzvPort);
  } else if (o.masterAddr) {
    c.storeHost = *o.masterAddr;
    c.storePort = o.masterPort.value_or(29500);
  } else if (inSlurmStep(c.layout)) {
    c.storeHost = c.layout.hosts.front();
    c.storePort = cluster::derivedMasterPort(c.layout.jobId, c.layout.stepId);
  } else {
    throw UsageError(
        fmt::format("--nnodes {} needs --rdzv-endpoint HOST:PORT (or --master-addr and "
                    "--master-port): where the agents' store is hosted",
                    nodes));
  }
}

// The job's token: DISTRUN_TOKEN; in a Slurm step, the keyed hash of its
// ids; else the keyed hash of --rdzv-id, or without one (torchrun's static
// `--master-addr A --master-port P`, which needs no run id) of the store's
// endpoint: every node must then share the user's secret, as a shared home
// does (docs/security.md).
void placeToken(const RunOptions& o, const RunContext& ctx, AgentConfig& c) {
  std::optional<std::string> token = ctx.env.get("DISTRUN_TOKEN");
  if (!token && inSlurmStep(c.layout)) token = slurmToken(c.layout, ctx.env);
  if (!token && o.rdzvId) token = derivedToken(ctx.env, "rdzv:" + *o.rdzvId);
  if (!token) {
    token = derivedToken(ctx.env, fmt::format("store:{}:{}", c.storeHost, c.storePort));
  }
  c.token = *token;
}

void placeExplicit(const RunOptions& o, const RunContext& ctx, int nodes, AgentConfig& c) {
  c.layout.numNodes = nodes;
  c.layout.nodeRank = o.nodeRank.value_or(c.layout.nodeRank);
  if (c.layout.nodeRank < 0 || c.layout.nodeRank >= nodes) {
    throw UsageError(
        fmt::format("--node-rank {} contradicts --nnodes {}: expected "
                    "0 <= node rank < nodes",
                    c.layout.nodeRank, nodes));
  }
  placeStore(o, std::to_string(nodes), c);
  c.host = o.localAddr.value_or(ctx.host.hostname);
  c.runId = o.rdzvId.value_or(inSlurmStep(c.layout) ? cluster::defaultRunId(c.layout) : "none");
  placeToken(o, ctx, c);
}

// Nodes that meet by arrival (torchrun's c10d rendezvous): --nnodes
// MIN:MAX, or N nodes without --node-rank outside Slurm. In a Slurm step,
// the node ids are the preferred node ranks, numbered within that step.
void placeByArrival(const RunOptions& o, const RunContext& ctx, NodeRange nodes, AgentConfig& c) {
  if (o.nodeRank) {
    throw UsageError(fmt::format(
        "--node-rank {} contradicts --nnodes {}: the nodes of an elastic job get their ranks as "
        "they arrive; drop --node-rank",
        *o.nodeRank, *o.nnodes));
  }
  const bool slurm = inSlurmStep(c.layout);
  placeStore(o, *o.nnodes, c);
  c.host = o.localAddr.value_or(slurm ? c.layout.hosts.at(static_cast<size_t>(c.layout.nodeRank))
                                      : ctx.host.hostname);
  c.runId = o.rdzvId.value_or(slurm ? cluster::defaultRunId(c.layout) : "none");
  placeToken(o, ctx, c);
  ElasticSpec e{nodes.min, nodes.max,
                seconds(secondsFrom(o.rdzvConf, "last_call_timeout").value_or(5)), c.host,
                std::nullopt};
  if (slurm) {
    e.preferredNodeRank = c.layout.nodeRank;
    e.preferredRankScope = fmt::format("{}.{}", c.layout.jobId, c.layout.stepId);
  }
  c.layout.numNodes = nodes.max;  // until the first round says how many came
  c.layout.nodeRank = 0;
  c.elastic = e;
}

void placeNode(const RunOptions& o, const RunContext& ctx, AgentConfig& c) {
  NodeRange nodes = parseNodes(o.nnodes);
  if (o.standalone) {
    if (nodes.max != 1) throw UsageError("--standalone runs one node: drop --nnodes");
    placeStandalone(o, ctx, c);
  } else if (nodes.elastic() || (nodes.max > 1 && !o.nodeRank && !inSlurmStep(c.layout))) {
    placeByArrival(o, ctx, nodes, c);
  } else if (o.nnodes || o.nodeRank || o.rdzvEndpoint || o.masterAddr) {
    if (nodes.max == 1) {
      placeOneNode(o, ctx, c);
    } else {
      placeExplicit(o, ctx, nodes.max, c);
    }
  } else if (inSlurmStep(c.layout)) {
    placeFromSlurm(o, ctx, c);
  } else {
    placeStandalone(o, ctx, c);
  }
  // A one-node job's store listens on loopback only (agent.cc), where the
  // node's name (a one-node Slurm step's first host) may not lead.
  if (c.layout.numNodes == 1) c.storeHost = "127.0.0.1";
}

void placeLogs(const RunOptions& o, AgentConfig& c) {
  c.redirects = parseStreamSpec(o.redirects, "--redirects");
  c.tee = parseStreamSpec(o.tee, "--tee");
  c.logDir = o.logDir.value_or("");
  bool wantsFiles = false;
  for (int r = 0; r < c.layout.localWorldSize; ++r) {
    wantsFiles |= (streamBits(c.redirects, r) | streamBits(c.tee, r)) != 0;
  }
  c.stdoutFilters = parseDuplicateFilters(o.duplicateStdoutFilters);
  c.stderrFilters = parseDuplicateFilters(o.duplicateStderrFilters);
  wantsFiles |= !c.stdoutFilters.empty() || !c.stderrFilters.empty();
  c.logDirIsPrivate = c.logDir.empty() && wantsFiles;
  c.errorRoot = c.logDir;
  if (o.localRanksFilter) {
    std::set<int> ranks;
    for (const std::string& r : split(*o.localRanksFilter, ',')) {
      ranks.insert(static_cast<int>(parseCount(r, "--local-ranks-filter")));
    }
    c.consoleRanks = ranks;
  }
}

// --standalone is one node with a private store on a free port: a flag
// that places the store or the node otherwise contradicts it (torchrun
// overrides them silently).
void checkStandalone(const RunOptions& o) {
  if (!o.standalone) return;
  auto contradiction = [](const std::string& flag) {
    return UsageError(fmt::format(
        "--standalone contradicts {}: --standalone hosts a private store on a free port of "
        "127.0.0.1 for one node; drop one of them",
        flag));
  };
  if (o.rdzvEndpoint) throw contradiction("--rdzv-endpoint " + *o.rdzvEndpoint);
  if (o.masterAddr) throw contradiction("--master-addr " + *o.masterAddr);
  if (o.masterPort) throw contradiction(fmt::format("--master-port {}", *o.masterPort));
  if (o.nodeRank.value_or(0) != 0) {
    throw contradiction(fmt::format("--node-rank {}", *o.nodeRank));
  }
}

// `mpirun -np K distrun run`: K agents that cannot find each other, each
// starting a separate job of its own workers.
void checkNotOneOfSeveralMpiTasks(const RunOptions& o, const cluster::JobLayout& l) {
  const bool mpi =
      l.scheduler == cluster::Scheduler::kOpenMpi || l.scheduler == cluster::Scheduler::kMpich;
  const bool placed = o.nnodes || o.nodeRank || o.rdzvEndpoint || o.masterAddr || o.standalone;
  if (!mpi || l.worldSize <= 1 || placed) return;
  const char* size =
      l.scheduler == cluster::Scheduler::kOpenMpi ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE";
  throw UsageError(fmt::format(
      "distrun run is one of {} tasks started by mpirun ({}={}): each would start its own "
      "separate job of --nproc-per-node {} workers; for one rank per task use 'mpirun -np N "
      "distrun exec -- PROGRAM', for workers per node start one distrun run per node (srun "
      "--ntasks-per-node=1, or --nnodes, --node-rank and --rdzv-endpoint)",
      l.worldSize, size, l.worldSize, o.nprocPerNode));
}

}  // namespace

namespace {

// Progress is sampled every second: a shorter limit would only look precise.
void checkHangTimeout(double seconds) {
  if (seconds == 0 || (std::isfinite(seconds) && seconds >= 1)) return;
  throw UsageError(fmt::format(
      "--hang-timeout {:g}: expected 0 (off) or a number of seconds of at least 1 (progress is "
      "sampled every second)",
      seconds));
}

}  // namespace

void checkProgramGiven(const RunOptions& o) {
  if (o.program.empty()) {
    throw UsageError("run: no PROGRAM given: distrun run [OPTIONS] PROGRAM [ARGS...]");
  }
}

void checkRunOptions(const RunOptions& o, const cluster::JobLayout& layout) {
  checkProgramGiven(o);
  parseRdzvConf(o.rdzvConf);
  checkHangTimeout(o.hangTimeout);
  parseStatusMode(o.status);
  checkStandalone(o);
  checkNotOneOfSeveralMpiTasks(o, layout);
}

std::string randomHex() { return distrun::randomHex(16); }

bool runsUnderPython(const RunOptions& o) {
  const std::string& program = o.program.front();
  const bool pythonFile = program.size() > 3 && program.compare(program.size() - 3, 3, ".py") == 0;
  return o.module || o.runPath || (!o.noPython && (o.pythonByDefault || pythonFile));
}

PythonChoice choosePython(const RunOptions& o, const Environment& env) {
  return distrun::choosePython(o.python, env);
}

std::vector<std::string> workerCommand(const RunOptions& o, const Environment& env) {
  checkProgramGiven(o);
  if (o.module && o.noPython) throw UsageError("-m/--module cannot be combined with --no-python");
  if (!runsUnderPython(o)) return o.program;
  std::vector<std::string> argv = {choosePython(o, env).interpreter, "-u"};
  if (o.module) argv.push_back("-m");
  argv.insert(argv.end(), o.program.begin(), o.program.end());
  return argv;
}

namespace {

std::optional<cluster::SiteProfile> selectSite(const RunOptions& o, const RunContext& ctx) {
  return cluster::selectSiteProfile(o.site, ctx.env,
                                    cluster::siteSearchPath(ctx.env, ctx.builtinSiteDir));
}

// torchrun's prefix template (string.Template: $name or ${name}) in
// --log-prefix's words.
std::string fromTorchrunTemplate(std::string text) {
  const std::pair<const char*, const char*> names[] = {{"role_name", "{role}"},
                                                       {"local_rank", "{local_rank}"},
                                                       {"rank", "{rank}"},
                                                       {"hostname", "{host}"}};
  for (const auto& [name, ours] : names) {
    for (const std::string& spelled : {"${" + std::string(name) + "}", "$" + std::string(name)}) {
      for (size_t at = text.find(spelled); at != std::string::npos; at = text.find(spelled, at)) {
        text.replace(at, spelled.size(), ours);
      }
    }
  }
  return text;
}

// This node's topology with only the agent's GPUs (agentGpus).
binding::AgentGpus agentGpusOf(const RunContext& ctx, const std::string& fallbackVariable) {
  binding::NodeTopology node;
  if (ctx.topology) {
    node = *ctx.topology;
  } else {
    node.source = "this node's usable CPUs";
    node.cpus = ctx.cpus;
  }
  return binding::agentGpus(node, ctx.env, fallbackVariable);
}

binding::NodeTopology nodeOf(const RunContext& ctx) { return agentGpusOf(ctx, "").node; }

binding::BindRequest bindRequest(const RunOptions& o, const RunContext& ctx,
                                 const std::optional<cluster::SiteProfile>& site, int nproc) {
  binding::BindRequest r;
  r.ranks = nproc;
  r.allowed = ctx.cpus;
  r.cpu = binding::parseCpuBind(o.cpuBind);
  if (o.gpuBind) r.gpu = binding::parseGpuBind(*o.gpuBind);
  if (site && site->node) r.site = &*site->node;
  r.siteName = site ? site->name : "";
  return r;
}

}  // namespace

void checkBindOptions(const RunOptions& o, const RunContext& ctx) {
  binding::BindRequest r = bindRequest(o, ctx, std::nullopt, 1);
  int64_t nproc = 0;
  try {
    nproc = parseCount(o.nprocPerNode, "--nproc-per-node", 4096);
  } catch (const ConfigError&) {
  }
  if (nproc > 0) {
    binding::checkCpuBind(r.cpu, static_cast<int>(nproc), ctx.cpus);
    if (r.gpu) binding::checkGpuBindCount(*r.gpu, static_cast<int>(nproc));
  }
  if (r.gpu && r.gpu->mode == binding::GpuBind::Mode::kMap && nodeOf(ctx).gpus.empty()) {
    throw UsageError(
        fmt::format("--gpu-bind {}: this node has no GPU (from {}): leave "
                    "--gpu-bind out",
                    *o.gpuBind, nodeOf(ctx).source));
  }
  if (r.cpu.mode != binding::CpuBind::Mode::kSite) return;
  std::optional<cluster::SiteProfile> site = selectSite(o, ctx);
  if (!site || !site->node) {
    binding::BindRequest none = bindRequest(o, ctx, site, 1);
    binding::bindRanks(nodeOf(ctx), none);  // throws naming the profile
  }
}

// The scheduler's name for this node when it has one, else the hostname.
std::string nodeNameOf(const AgentConfig& c, const RunContext& ctx) {
  const auto rank = static_cast<size_t>(c.layout.nodeRank);
  if (inSlurmStep(c.layout) && rank < c.layout.hosts.size()) return c.layout.hosts[rank];
  return ctx.host.hostname;
}

AgentConfig resolveAgentConfig(const RunOptions& o, const RunContext& ctx) {
  AgentConfig c;
  c.layout = cluster::detectJobLayout(ctx.env, ctx.host);
  checkRunOptions(o, c.layout);
  int nproc = parseNproc(o.nprocPerNode, ctx);
  placeNode(o, ctx, c);  // reads the scheduler's tasks per node: the agent's
  c.nodeName = nodeNameOf(c, ctx);
  c.layout.localWorldSize = nproc;
  c.program = workerCommand(o, ctx.env);
  if (runsUnderPython(o)) {
    PythonChoice python = choosePython(o, ctx.env);
    c.python = python.interpreter;
    c.pythonSource = python.source;
    c.pythonScript = o.module ? "" : o.program.front();
  }
  c.maxRestarts = o.maxRestarts;
  c.termTimeout = seconds(o.termTimeout);
  c.hangTimeout = seconds(o.hangTimeout);
  c.joinTimeout =
      seconds(o.joinTimeout.value_or(secondsFrom(o.rdzvConf, "join_timeout").value_or(300)));
  c.role = o.role;
  c.logPrefix =
      o.logLinePrefixTemplate ? fromTorchrunTemplate(*o.logLinePrefixTemplate) : o.logPrefix;
  expandPrefix(c.logPrefix, 0, 0, 0, c.role, c.host);  // checks the template
  placeLogs(o, c);
  c.cpus = ctx.cpus;
  c.site = selectSite(o, ctx);
  if (c.site && !c.site->gpuVisibility.empty()) c.gpuVisibilityVariable = c.site->gpuVisibility;
  binding::AgentGpus gpus = agentGpusOf(ctx, c.gpuVisibilityVariable);
  c.gpuIds = gpus.ids;
  c.gpuVisibilityVariable = gpus.variable;
  c.virtualLocalRank = o.virtualLocalRank;
  c.signalsToHandle = o.signalsToHandle;
  c.plan = binding::bindRanks(gpus.node, bindRequest(o, ctx, c.site, nproc));
  c.status = resolveStatusMode(parseStatusMode(o.status), ctx.terminal);
  c.statusFile = ctx.env.getOr("DISTRUN_STATUS_FILE", "");
  return c;
}

std::vector<std::string> rdzvConfNotes(const std::string& conf) {
  std::vector<std::string> notes;
  for (const auto& [key, value] : parseRdzvConf(conf)) {
    if (std::find(kRdzvConfKeys.begin(), kRdzvConfKeys.end(), key) != kRdzvConfKeys.end()) {
      continue;
    }
    const std::optional<std::string> near = closestName(key, kRdzvConfKeys);
    notes.push_back(fmt::format(
        "--rdzv-conf {}={}: a key neither torchrun's rendezvous nor distrun reads, ignored{}", key,
        value, near ? fmt::format(" (did you mean {}?)", *near) : ""));
  }
  return notes;
}

}  // namespace distrun::launch
