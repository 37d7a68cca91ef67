#include "distrun/doctor/job_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "distrun/doctor/checks.h"
#include "distrun/doctor/job_checks.h"

namespace distrun::doctor {

bool isSelected(const DoctorOptions& options, const std::string& check) {
  return options.checks.empty() ||
         std::find(options.checks.begin(), options.checks.end(), check) != options.checks.end();
}

CheckResult referenceClock(int numNodes) {
  return ok("clock", fmt::format("the reference clock of the {} nodes", numNodes));
}

std::string allreduceDecision(const ProbeContext& ctx, const JobAnswers& answers) {
  if (!isSelected(ctx.options, "allreduce")) return "skip:not selected (--checks)";
  if (ctx.layout.numNodes < 2) return "skip:one node: no network between nodes to measure";
  const auto missing = std::count(answers.reports.begin(), answers.reports.end(), std::nullopt);
  if (missing > 0) {
    return fmt::format("skip:not measured: {} task(s) did not report in time", missing);
  }
  return "go";
}

CheckResult allreduceSkipped(const std::string& decision) {
  return skip("allreduce", decision.substr(decision.find(':') + 1));
}

CheckResult allreduceFailed(const std::string& why) {
  return fail("allreduce", "the allreduce among the nodes failed: " + why,
              "a node cannot reach the others over the network Gloo uses: check the network "
              "check's interfaces (GLOO_SOCKET_IFNAME) and the firewall between the nodes");
}

namespace {

// Whether the layout's hosts are the job's nodes in node order (Slurm,
// PBS), not a guess (a world described by hand names only this host).
bool nodesNamedByScheduler(const ProbeContext& ctx) {
  return static_cast<int>(ctx.layout.hosts.size()) == ctx.layout.numNodes;
}

// Where a node's results gather, in the order the scheduler numbers nodes.
class NodeTable {
 public:
  explicit NodeTable(const std::vector<std::string>& hosts) {
    for (const std::string& host : hosts) indexOf(host);
  }
  NodeReport& node(const std::string& name) { return nodes_[indexOf(name)]; }
  std::vector<NodeReport>& nodes() { return nodes_; }

 private:
  size_t indexOf(const std::string& name) {
    auto it = std::find_if(nodes_.begin(), nodes_.end(),
                           [&](const NodeReport& n) { return n.node == name; });
    if (it != nodes_.end()) return static_cast<size_t>(it - nodes_.begin());
    nodes_.push_back(NodeReport{name, {}});
    return nodes_.size() - 1;
  }
  std::vector<NodeReport> nodes_;
};

// One task's result joins its node's: a check seen again (a further
// task's CPU binding) keeps the worse of the two, saying whose it is.
void mergeResult(NodeReport& node, CheckResult result) {
  CheckResult* had = node.find(result.check);
  if (had == nullptr) {
    node.results.push_back(std::move(result));
    return;
  }
  if (result.state <= had->state) return;
  auto local = result.facts.find("local_rank");
  if (local != result.facts.end() && local->second != "0") {
    result.detail = "local rank " + local->second + ": " + result.detail;
  }
  *had = std::move(result);
}

// The node a rank that never reported ran on, as Slurm's default block
// distribution places it (the last node when the ranks do not divide);
// "rank N's node" when the scheduler named no nodes.
std::string nodeOfRank(const ProbeContext& ctx, int rank, const std::vector<NodeReport>& nodes) {
  const int perNode = std::max(1, ctx.layout.worldSize / std::max(1, ctx.layout.numNodes));
  const size_t index = static_cast<size_t>(rank / perNode);
  if (index < nodes.size() && nodesNamedByScheduler(ctx)) return nodes[index].node;
  return nodes.empty() ? fmt::format("rank {}'s node", rank) : nodes.back().node;
}

CheckResult noAnswer(const std::vector<int>& ranks, std::chrono::milliseconds window,
                     const std::string& master) {
  std::vector<std::string> names;
  for (int rank : ranks) names.push_back(std::to_string(rank));
  return fail("answer",
              fmt::format("rank {} did not report within {} s", fmt::join(names, ", "),
                          window.count() / 1000),
              "its probe hung or could not reach MASTER_ADDR " + master +
                  ": see that task's own output (srun -l prefixes each line with its rank)");
}

// "answer" first on every node: ok, or fail naming the silent ranks.
void addAnswers(const ProbeContext& ctx, const JobAnswers& answers,
                std::chrono::milliseconds window, NodeTable& table) {
  std::map<std::string, std::vector<int>> silent;
  for (size_t rank = 0; rank < answers.reports.size(); ++rank) {
    if (answers.reports[rank]) continue;
    silent[nodeOfRank(ctx, static_cast<int>(rank), table.nodes())].push_back(
        static_cast<int>(rank));
  }
  for (const auto& [name, ranks] : silent) table.node(name);
  for (NodeReport& node : table.nodes()) {
    auto it = silent.find(node.node);
    CheckResult answer = it == silent.end() ? ok("answer", "reported in time")
                                            : noAnswer(it->second, window, ctx.layout.masterHost);
    node.results.insert(node.results.begin(), answer);
  }
}

void addAllreduce(const JobAnswers& answers, NodeTable& table) {
  if (!answers.allreduce) return;
  for (NodeReport& node : table.nodes()) {
    const CheckResult* answer = node.find("answer");
    if (answer != nullptr && answer->state == CheckState::kOk) {
      node.results.push_back(*answers.allreduce);
    }
  }
}

void addClockSkips(const ProbeContext& ctx, NodeTable& table) {
  if (!isSelected(ctx.options, "clock") || ctx.layout.numNodes > 1) return;
  for (NodeReport& node : table.nodes()) {
    node.results.push_back(skip("clock", "one node: no other clock to compare with"));
  }
}

std::vector<std::string> checksPresent(const std::vector<NodeReport>& nodes) {
  std::vector<std::string> present;
  for (const std::string& name : allCheckNames()) {
    for (const NodeReport& node : nodes) {
      if (node.find(name) != nullptr) {
        present.push_back(name);
        break;
      }
    }
  }
  return present;
}

}  // namespace

DoctorReport assembleReport(const ProbeContext& ctx, const JobAnswers& answers,
                            std::chrono::milliseconds window) {
  NodeTable table(nodesNamedByScheduler(ctx) ? ctx.layout.hosts : std::vector<std::string>{});
  for (const std::optional<NodeReport>& task : answers.reports) {
    if (!task) continue;
    for (const CheckResult& result : task->results) mergeResult(table.node(task->node), result);
  }
  addAnswers(ctx, answers, window, table);
  addClockSkips(ctx, table);
  addAllreduce(answers, table);
  DoctorReport report;
  report.nodes = std::move(table.nodes());
  if (isSelected(ctx.options, "straggler")) flagStragglers(report, ctx.options.stragglerMargin);
  if (isSelected(ctx.options, "torch-version")) compareTorchVersions(report);
  report.checks = checksPresent(report.nodes);
  return report;
}

}  // namespace distrun::doctor
