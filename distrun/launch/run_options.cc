#include "distrun/launch/run_options.h"

#include <unistd.h>

#include <cstdint>
#include <fstream>

#include <fmt/format.h>

#include "distrun/cluster/master_port.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/launch/worker_output.h"

namespace distrun::launch {

namespace {

using std::chrono::milliseconds;

constexpr int kDefaultRdzvPort = 29400;  // torchrun's c10d default

milliseconds seconds(double s) { return milliseconds(static_cast<long long>(s * 1000)); }

int parseNodes(const std::optional<std::string>& value) {
  if (!value) return 1;
  std::vector<std::string> parts = split(*value, ':');
  int min = static_cast<int>(parseCount(parts[0], "--nnodes"));
  int max = parts.size() == 2 ? static_cast<int>(parseCount(parts[1], "--nnodes")) : min;
  if (parts.size() > 2 || min == 0 || max != min) {
    throw UsageError(
        fmt::format("--nnodes {}: expected a node count N (or N:N); distrun starts a fixed "
                    "set of nodes, elastic MIN:MAX ranges are not supported",
                    *value));
  }
  return min;
}

int parseNproc(const std::string& value, const RunContext& ctx) {
  int cpus = std::max(static_cast<int>(ctx.cpus.size()), 1);
  if (value == "cpu") return cpus;
  if (value == "auto") return ctx.gpus > 0 ? ctx.gpus : cpus;
  if (value == "gpu") {
    if (ctx.gpus == 0) {
      throw UsageError("--nproc-per-node gpu: this node has no visible GPU");
    }
    return ctx.gpus;
  }
  try {
    int n = static_cast<int>(parseCount(value, "--nproc-per-node", 4096));
    if (n > 0) return n;
  } catch (const ConfigError&) {
  }
  throw UsageError(
      fmt::format("--nproc-per-node {}: expected a positive number, cpu, gpu or auto", value));
}

// --rdzv-conf join_timeout=S,...: distrun reads join_timeout; the other
// torchrun keys are accepted and have no effect.
std::optional<double> joinTimeoutFrom(const std::string& conf) {
  std::optional<double> timeout;
  for (const std::string& pair : split(conf, ',')) {
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    if (eq == std::string::npos) {
      throw UsageError(fmt::format("--rdzv-conf '{}': expected key=value pairs", conf));
    }
    if (pair.substr(0, eq) == "join_timeout") {
      timeout = static_cast<double>(parseCount(pair.substr(eq + 1), "--rdzv-conf join_timeout"));
    }
  }
  return timeout;
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
// a hash of the job, the step and the user (docs/launcher.md says what it
// protects against).
std::string slurmToken(const cluster::JobLayout& l, const Environment& env) {
  return env.getOr("DISTRUN_TOKEN",
                   fmt::format("{:016x}", fnv1a(fmt::format("distrun:{}:{}:{}", l.jobId, l.stepId,
                                                            ::getuid()))));
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

void placeExplicit(const RunOptions& o, const RunContext& ctx, int nodes, AgentConfig& c) {
  if (!o.nodeRank && !inSlurmStep(c.layout)) {
    throw UsageError(fmt::format("--nnodes {} needs --node-rank on every node", nodes));
  }
  c.layout.numNodes = nodes;
  c.layout.nodeRank = o.nodeRank.value_or(c.layout.nodeRank);
  if (c.layout.nodeRank < 0 || c.layout.nodeRank >= nodes) {
    throw UsageError(
        fmt::format("--node-rank {} contradicts --nnodes {}: expected "
                    "0 <= node rank < nodes",
                    c.layout.nodeRank, nodes));
  }
  if (o.rdzvEndpoint) {
    std::tie(c.storeHost, c.storePort) = splitEndpoint(*o.rdzvEndpoint, kDefaultRdzvPort);
  } else if (o.masterAddr) {
    c.storeHost = *o.masterAddr;
    c.storePort = o.masterPort.value_or(29500);
  } else {
    throw UsageError(
        fmt::format("--nnodes {} needs --rdzv-endpoint HOST:PORT (or --master-addr and "
                    "--master-port): where node 0's agent hosts the store",
                    nodes));
  }
  c.host = o.localAddr.value_or(ctx.host.hostname);
  bool slurm = inSlurmStep(c.layout);
  c.runId = o.rdzvId.value_or(slurm ? cluster::defaultRunId(c.layout) : "none");
  std::optional<std::string> token = ctx.env.get("DISTRUN_TOKEN");
  if (!token && slurm) token = slurmToken(c.layout, ctx.env);
  if (!token) {
    throw UsageError(
        "a run of several nodes outside Slurm needs DISTRUN_TOKEN: set the "
        "same secret on every node (e.g. export DISTRUN_TOKEN=$(openssl rand "
        "-hex 16))");
  }
  c.token = *token;
}

void placeNode(const RunOptions& o, const RunContext& ctx, AgentConfig& c) {
  int nodes = parseNodes(o.nnodes);
  if (o.standalone) {
    if (nodes != 1) throw UsageError("--standalone runs one node: drop --nnodes");
    placeStandalone(o, ctx, c);
  } else if (o.nnodes || o.nodeRank || o.rdzvEndpoint || o.masterAddr) {
    if (nodes == 1 && !o.rdzvEndpoint && !o.masterAddr) {
      placeStandalone(o, ctx, c);
    } else {
      placeExplicit(o, ctx, nodes, c);
    }
  } else if (inSlurmStep(c.layout)) {
    placeFromSlurm(o, ctx, c);
  } else {
    placeStandalone(o, ctx, c);
  }
}

void placeLogs(const RunOptions& o, AgentConfig& c) {
  c.redirects = parseStreamSpec(o.redirects, "--redirects");
  c.tee = parseStreamSpec(o.tee, "--tee");
  c.logDir = o.logDir.value_or("");
  bool wantsFiles = false;
  for (int r = 0; r < c.layout.localWorldSize; ++r) {
    wantsFiles |= (streamBits(c.redirects, r) | streamBits(c.tee, r)) != 0;
  }
  if (c.logDir.empty() && wantsFiles) c.logDir = "/tmp/distrun-logs";
  if (o.localRanksFilter) {
    std::set<int> ranks;
    for (const std::string& r : split(*o.localRanksFilter, ',')) {
      ranks.insert(static_cast<int>(parseCount(r, "--local-ranks-filter")));
    }
    c.consoleRanks = ranks;
  }
}

}  // namespace

std::string randomHex() {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  unsigned char bytes[16] = {};
  urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
  if (!urandom) throw IoError("cannot read /dev/urandom for a job token");
  std::string hex;
  for (unsigned char b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

std::vector<std::string> workerCommand(const RunOptions& o, const Environment& env) {
  if (o.program.empty()) {
    throw UsageError("run: no PROGRAM given: distrun run [OPTIONS] PROGRAM [ARGS...]");
  }
  if (o.module && o.noPython) throw UsageError("-m/--module cannot be combined with --no-python");
  const std::string& program = o.program.front();
  bool python =
      o.module || o.runPath ||
      (!o.noPython && program.size() > 3 && program.compare(program.size() - 3, 3, ".py") == 0);
  if (!python) return o.program;
  std::string interpreter =
      o.python.value_or(env.getOr("DISTRUN_PYTHON", env.getOr("PYTHON_EXEC", "python3")));
  std::vector<std::string> argv = {interpreter, "-u"};
  if (o.module) argv.push_back("-m");
  argv.insert(argv.end(), o.program.begin(), o.program.end());
  return argv;
}

AgentConfig resolveAgentConfig(const RunOptions& o, const RunContext& ctx) {
  AgentConfig c;
  c.layout = cluster::detectJobLayout(ctx.env, ctx.host);
  int nproc = parseNproc(o.nprocPerNode, ctx);
  placeNode(o, ctx, c);  // reads the scheduler's tasks per node: the agent's
  c.layout.localWorldSize = nproc;
  c.program = workerCommand(o, ctx.env);
  c.maxRestarts = o.maxRestarts;
  c.termTimeout = seconds(o.termTimeout);
  c.joinTimeout = seconds(o.joinTimeout.value_or(joinTimeoutFrom(o.rdzvConf).value_or(300)));
  c.role = o.role;
  c.logPrefix = o.logPrefix;
  expandPrefix(c.logPrefix, 0, 0, 0, c.role, c.host);  // checks the template
  placeLogs(o, c);
  if (o.cpuBind != "cores" && o.cpuBind != "none") {
    throw UsageError(fmt::format("--cpu-bind {}: expected cores or none", o.cpuBind));
  }
  c.bindCpus = o.cpuBind == "cores";
  c.cpus = ctx.cpus;
  c.site = cluster::selectSiteProfile(o.site, ctx.env,
                                      cluster::siteSearchPath(ctx.env, ctx.builtinSiteDir));
  return c;
}

}  // namespace distrun::launch
