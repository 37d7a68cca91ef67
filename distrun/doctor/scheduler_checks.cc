// "scheduler", "hostnames" and "master-port": the job's view of itself.
#include "distrun/doctor/scheduler_checks.h"

#include <netdb.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <numeric>
#include <set>

#include "distrun/cluster/hostlist.h"
#include "distrun/cluster/leftovers.h"
#include "distrun/cluster/tasks_per_node.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

using cluster::Scheduler;

constexpr const char* kScheduler = "scheduler";
constexpr size_t kNamesShown = 5;  // unresolved names a result lists

// What to do about scheduler variables that contradict each other.
std::string viewFix() {
  std::string hint = cluster::kClearStaleHint;  // "; if left from an earlier shell ..."
  hint = hint.substr(hint.find_first_not_of("; "));
  return fmt::format("{}; or start doctor as the step's tasks: srun distrun doctor", hint);
}

// A variable that is set: its name and value.
struct Found {
  std::string name, value;
};

std::optional<Found> firstSet(const Environment& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto value = env.get(name)) return Found{name, *value};
  }
  return std::nullopt;
}

// A task of a job step, as detectSlurm tells one from a batch script.
bool inStep(const Environment& env) {
  return (env.has("SLURM_STEP_ID") || env.has("SLURM_STEPID")) && env.has("SLURM_PROCID");
}

// The Slurm variables the layout comes from: the step's (or, as
// detectSlurm reads them, their job-level twins), or the job's outside a step.
struct SlurmView {
  std::optional<Found> tasks, perNode, nodes, list;
};

SlurmView readSlurmView(const Environment& env) {
  if (inStep(env)) {
    return {firstSet(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"}),
            firstSet(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}),
            firstSet(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"}),
            firstSet(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"})};
  }
  return {firstSet(env, {"SLURM_NTASKS", "SLURM_NPROCS"}), firstSet(env, {"SLURM_TASKS_PER_NODE"}),
          firstSet(env, {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}),
          firstSet(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"})};
}

// The view's values, parsed (ConfigError naming the variable otherwise).
struct SlurmCounts {
  int64_t tasks = 0, nodes = 0;
  std::vector<int> perNode;
  std::vector<std::string> hosts;
};

SlurmCounts parseView(const SlurmView& v) {
  SlurmCounts c;
  if (v.tasks) c.tasks = parseCount(v.tasks->value, v.tasks->name);
  if (v.nodes) c.nodes = parseCount(v.nodes->value, v.nodes->name);
  if (v.perNode) c.perNode = cluster::parseTasksPerNode(v.perNode->value, v.perNode->name);
  if (v.list) c.hosts = cluster::detail::hostsOf(v.list->name, v.list->value);
  return c;
}

std::optional<std::string> taskProblem(const SlurmView& v, const SlurmCounts& c) {
  if (!v.tasks || !v.perNode) return std::nullopt;
  const int64_t total = std::accumulate(c.perNode.begin(), c.perNode.end(), int64_t{0});
  if (total == c.tasks) return std::nullopt;
  return fmt::format("{}={} adds up to {} tasks but {}={}", v.perNode->name, v.perNode->value,
                     total, v.tasks->name, v.tasks->value);
}

std::optional<std::string> nodeProblem(const SlurmView& v, const SlurmCounts& c) {
  if (v.nodes && v.list && static_cast<int64_t>(c.hosts.size()) != c.nodes) {
    return fmt::format("{}={} names {} hosts but {}={}", v.list->name, v.list->value,
                       c.hosts.size(), v.nodes->name, v.nodes->value);
  }
  if (v.nodes && v.perNode && static_cast<int64_t>(c.perNode.size()) != c.nodes) {
    return fmt::format("{}={} counts tasks on {} nodes but {}={}", v.perNode->name,
                       v.perNode->value, c.perNode.size(), v.nodes->name, v.nodes->value);
  }
  return std::nullopt;
}

std::string shortName(const std::string& host) { return host.substr(0, host.find('.')); }

// This node, as the step's node list must name it at SLURM_NODEID.
std::optional<std::string> placeProblem(const ProbeContext& ctx, const SlurmView& v,
                                        const SlurmCounts& c) {
  if (!inStep(ctx.env) || !v.list) return std::nullopt;
  const std::optional<std::string> slurmName = ctx.env.get("SLURMD_NODENAME");
  const std::string me = shortName(slurmName.value_or(ctx.host.hostname));
  const std::string source = slurmName ? "SLURMD_NODENAME" : "the host name";
  auto at = std::find_if(c.hosts.begin(), c.hosts.end(),
                         [&](const std::string& h) { return shortName(h) == me; });
  if (at == c.hosts.end()) {
    return fmt::format("{} is not in {}={}", source, v.list->name, v.list->value);
  }
  const int nodeRank = ctx.layout.nodeRank;
  if (nodeRank < static_cast<int>(c.hosts.size()) && shortName(c.hosts[nodeRank]) == me) {
    return std::nullopt;
  }
  return fmt::format("SLURM_NODEID={} but {} is node {} of {}", nodeRank, source,
                     at - c.hosts.begin(), v.list->name);
}

std::string plural(int64_t n, const std::string& one) {
  return fmt::format("{} {}{}", n, one, n == 1 ? "" : "s");
}

std::string tasksPerNodeText(const SlurmView& v, const SlurmCounts& c) {
  const bool even = !c.perNode.empty() && std::all_of(c.perNode.begin(), c.perNode.end(),
                                                      [&](int n) { return n == c.perNode[0]; });
  if (even) return plural(c.perNode[0], "task") + " per node";
  return v.perNode ? "tasks per node " + v.perNode->value : "tasks per node unknown";
}

std::string slurmDetail(const ProbeContext& ctx, const SlurmView& v, const SlurmCounts& c) {
  const cluster::JobLayout& l = ctx.layout;
  if (!inStep(ctx.env)) {
    const std::string what = l.stepId == "batch" ? "batch script" : "allocation shell";
    return fmt::format("slurm job {}, {} outside a job step: this node alone", l.jobId, what);
  }
  return fmt::format("slurm step {}.{}: {}, {}, rank {} of {}", l.jobId, l.stepId,
                     plural(l.numNodes, "node"), tasksPerNodeText(v, c), l.rank, l.worldSize);
}

CheckResult checkSlurm(const ProbeContext& ctx) {
  const SlurmView view = readSlurmView(ctx.env);
  SlurmCounts counts;
  try {
    counts = parseView(view);
  } catch (const ConfigError& e) {
    return fail(kScheduler, e.what(), viewFix());
  }
  for (auto problem :
       {taskProblem(view, counts), nodeProblem(view, counts), placeProblem(ctx, view, counts)}) {
    if (problem) return fail(kScheduler, *problem, viewFix());
  }
  return ok(kScheduler, slurmDetail(ctx, view, counts));
}

std::string otherDetail(const cluster::JobLayout& l) {
  if (l.scheduler == Scheduler::kStandalone && l.worldSize == 1) {
    return "not under a scheduler: this node alone";
  }
  const std::string who = l.scheduler == Scheduler::kStandalone
                              ? "not under a scheduler (RANK, WORLD_SIZE)"
                              : cluster::schedulerName(l.scheduler) + " job " + l.jobId;
  return fmt::format("{}: {}, rank {} of {}", trim(who), plural(l.numNodes, "node"), l.rank,
                     l.worldSize);
}

// The layout error without the hint on clearing variables, which is the fix.
std::string withoutHint(const std::string& error) {
  const std::string hint = cluster::kClearStaleHint;
  const size_t at = error.rfind(hint);
  return at != std::string::npos && at + hint.size() == error.size() ? error.substr(0, at) : error;
}

}  // namespace

CheckResult checkScheduler(const ProbeContext& ctx) {
  if (!ctx.layoutError.empty()) return fail(kScheduler, withoutHint(ctx.layoutError), viewFix());
  CheckResult result = ctx.layout.scheduler == Scheduler::kSlurm
                           ? checkSlurm(ctx)
                           : ok(kScheduler, otherDetail(ctx.layout));
  result.facts["scheduler"] = cluster::schedulerName(ctx.layout.scheduler);
  result.values["nodes"] = ctx.layout.numNodes;
  result.values["tasks"] = ctx.layout.worldSize;
  return result;
}

// --- hostnames ---

namespace {

constexpr const char* kHostnames = "hostnames";

// The node list (when the job spans nodes: one node needs no names) and
// MASTER_ADDR, each once, in order.
std::vector<std::string> namesToResolve(const ProbeContext& ctx) {
  std::vector<std::string> names;
  if (ctx.layout.hosts.size() > 1) names = ctx.layout.hosts;
  if (auto master = ctx.env.get("MASTER_ADDR"); master && !master->empty()) {
    names.push_back(*master);
  }
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (seen.insert(name).second) unique.push_back(name);
  }
  return unique;
}

std::string listed(const std::vector<std::string>& names, const ProbeContext& ctx) {
  std::vector<std::string> shown;
  const std::string master = ctx.env.getOr("MASTER_ADDR", "");
  for (size_t i = 0; i < names.size() && i < kNamesShown; ++i) {
    shown.push_back(names[i] == master ? names[i] + " (MASTER_ADDR)" : names[i]);
  }
  std::string text = join(shown, ", ");
  if (names.size() > kNamesShown) text += fmt::format(" and {} more", names.size() - kNamesShown);
  return text;
}

}  // namespace

bool resolvesHere(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found);
  if (found != nullptr) ::freeaddrinfo(found);
  return rc == 0;
}

CheckResult checkHostnamesWith(const ProbeContext& ctx, const Resolver& resolve,
                               std::chrono::milliseconds budget) {
  const std::vector<std::string> names = namesToResolve(ctx);
  if (names.empty()) return skip(kHostnames, "one node and no MASTER_ADDR: no names to resolve");
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> unresolved;
  size_t tried = 0;
  for (; tried < names.size(); ++tried) {
    if (tried > 0 && std::chrono::steady_clock::now() - start >= budget) break;
    if (!resolve(names[tried])) unresolved.push_back(names[tried]);
  }
  const std::string partly =
      tried < names.size() ? fmt::format(" ({} of {} tried in time)", tried, names.size()) : "";
  CheckResult result;
  if (!unresolved.empty()) {
    result = fail(kHostnames,
                  fmt::format("{} of {} names do not resolve here: {}{}", unresolved.size(),
                              names.size(), listed(unresolved, ctx), partly),
                  "add them to /etc/hosts or DNS, or use the names this site resolves "
                  "(its node names, MASTER_ADDR)");
  } else if (tried < names.size()) {
    result = warn(kHostnames,
                  fmt::format("name lookups are slow here: {} of {} names resolved before the "
                              "time limit, the rest not tried",
                              tried, names.size()),
                  "a slow or unreachable name server (/etc/resolv.conf): ask the admins, or "
                  "list the nodes in /etc/hosts");
  } else {
    result = ok(kHostnames, fmt::format("all {} names of the job resolve here", names.size()));
  }
  result.values["names"] = static_cast<double>(names.size());
  result.values["unresolved_names"] = static_cast<double>(unresolved.size());
  return result;
}

CheckResult checkHostnames(const ProbeContext& ctx) {
  return checkHostnamesWith(ctx, resolvesHere, ctx.limit() * 3 / 4);
}

// --- master-port ---

namespace {

constexpr const char* kMasterPort = "master-port";
constexpr const char* kDeriveFix = "let distrun derive a free port: unset MASTER_PORT";

std::string masterNode(const cluster::JobLayout& layout) {
  if (!layout.hosts.empty()) return layout.hosts.front();
  return layout.masterHost.empty() ? "node 0" : layout.masterHost;
}

CheckResult portTaken(int port, const std::string& procRoot) {
  const std::optional<PortHolder> holder = findPortHolder(port, procRoot);
  if (holder && holder->pid == ::getpid()) {
    return ok(
        kMasterPort,
        fmt::format("MASTER_PORT {} is held by this doctor itself, free for the training", port));
  }
  if (!holder) {
    return fail(kMasterPort, fmt::format("MASTER_PORT {} is taken on this node", port),
                fmt::format("find its holder (ss -ltnp 'sport = :{}'), or {}", port, kDeriveFix));
  }
  return fail(kMasterPort,
              fmt::format("MASTER_PORT {} is taken on this node (by pid {}, {})", port, holder->pid,
                          holder->name),
              fmt::format("stop that process, or {}", kDeriveFix));
}

}  // namespace

CheckResult checkMasterPortWith(const ProbeContext& ctx, const std::string& procRoot) {
  if (!ctx.isMasterNode()) {
    return skip(kMasterPort, "checked on the master node, " + masterNode(ctx.layout));
  }
  const std::optional<std::string> text = ctx.env.get("MASTER_PORT");
  if (!text) {
    return skip(kMasterPort, "MASTER_PORT is not set: distrun derives a free one for the job");
  }
  int port = 0;
  try {
    port = static_cast<int>(parseCount(*text, "MASTER_PORT", 65535));
  } catch (const ConfigError&) {
  }
  if (port == 0) {
    return fail(kMasterPort, fmt::format("MASTER_PORT='{}' is not a port (1-65535)", *text),
                fmt::format("export MASTER_PORT=29500 (a free port), or {}", kDeriveFix));
  }
  CheckResult result = tcpPortIsFree(port)
                           ? ok(kMasterPort, fmt::format("MASTER_PORT {} is free", port))
                           : portTaken(port, procRoot);
  result.facts["master_port"] = std::to_string(port);
  return result;
}

CheckResult checkMasterPort(const ProbeContext& ctx) { return checkMasterPortWith(ctx, "/proc"); }

}  // namespace distrun::doctor
