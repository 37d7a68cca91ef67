#include "distrun/rdzv/elastic_plan.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::rdzv {

namespace {

// Longest exclusion, in rounds: 2^20 is beyond any job's restarts.
constexpr int kMaxExclusionShift = 20;

}  // namespace

std::optional<int> excludedUntil(std::vector<int> failedRounds, int round) {
  std::sort(failedRounds.begin(), failedRounds.end());
  failedRounds.erase(std::unique(failedRounds.begin(), failedRounds.end()), failedRounds.end());
  int pairs = 0;
  size_t j = 0;
  while (j + 1 < failedRounds.size() && failedRounds[j + 1] < round) {
    if (failedRounds[j + 1] != failedRounds[j] + 1) {
      ++j;
      continue;
    }
    const int from = failedRounds[j + 1] + 1;
    const int length = 1 << std::min(pairs++, kMaxExclusionShift);
    if (round >= from && round < from + length) return from + length;
    j += 2;
  }
  return std::nullopt;
}

namespace detail {

namespace {

// Reads newline-separated fields; anything missing or not a number is a
// RendezvousError naming `what` and the value.
class Fields {
 public:
  Fields(const std::string& value, const char* what) : value_(value), what_(what) {}
  std::string text() {
    if (at_ > value_.size()) fail();
    size_t end = std::min(value_.find('\n', at_), value_.size());
    std::string field = value_.substr(at_, end - at_);
    at_ = end + 1;
    return field;
  }
  int number() {
    std::string field = text();
    try {
      size_t used = 0;
      int n = std::stoi(field, &used);
      if (used == field.size()) return n;
    } catch (const std::exception&) {
    }
    fail();
  }
  [[noreturn]] void fail() const {
    throw RendezvousError(
        fmt::format("the rendezvous store holds a malformed {}: '{}'", what_, value_));
  }

 private:
  const std::string& value_;
  const char* what_;
  size_t at_ = 0;
};

// Whether the members' preferred ranks form one numbering: each has one,
// all of the first member's scope (two Slurm steps both have a node 0).
bool onePreferredNumbering(const std::vector<NodeRecord>& arrivals,
                           const std::vector<size_t>& members) {
  const std::string& scope = arrivals[members.front()].preferredRankScope;
  return std::all_of(members.begin(), members.end(), [&](size_t i) {
    return arrivals[i].preferredNodeRank >= 0 && arrivals[i].preferredRankScope == scope;
  });
}

// The arrivals in node-rank order: by preferred rank when all have one of
// one numbering.
std::vector<size_t> memberOrder(const std::vector<NodeRecord>& arrivals,
                                const std::vector<bool>& left) {
  std::vector<size_t> order;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (!left[i]) order.push_back(i);
  }
  if (!order.empty() && onePreferredNumbering(arrivals, order)) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return arrivals[a].preferredNodeRank < arrivals[b].preferredNodeRank;
    });
  }
  return order;
}

// Which arrivals to leave out; none when that would leave fewer than MIN.
std::vector<bool> leftOut(const std::vector<NodeRecord>& arrivals, const FailureTable& failures,
                          int round, int minNodes, std::vector<int>& rejoin) {
  std::vector<bool> left(arrivals.size(), false);
  rejoin.assign(arrivals.size(), 0);
  size_t count = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    auto history = failures.find(arrivals[i].name);
    if (history == failures.end()) continue;
    if (std::optional<int> until = excludedUntil(history->second, round)) {
      left[i] = true;
      rejoin[i] = *until;
      count++;
    }
  }
  if (static_cast<int>(arrivals.size() - count) >= minNodes) return left;
  rejoin.assign(arrivals.size(), 0);
  return std::vector<bool>(arrivals.size(), false);
}

}  // namespace

std::string encodeRecord(const NodeRecord& r) {
  std::string out =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}", r.nproc, r.preferredNodeRank,
                  r.preferredRankScope, r.standbyPort, r.host, r.name, r.trained.round,
                  r.trained.numNodes, r.trained.wasNodeZero ? 1 : 0, r.trained.gone.size());
  for (const std::string& name : r.trained.gone) out += "\n" + name;
  return out;
}

NodeRecord decodeRecord(const std::string& value) {
  Fields f(value, "node record");
  NodeRecord r;
  r.nproc = f.number();
  r.preferredNodeRank = f.number();
  r.preferredRankScope = f.text();
  r.standbyPort = f.number();
  r.host = f.text();
  r.name = f.text();
  r.trained.round = f.number();
  r.trained.numNodes = f.number();
  r.trained.wasNodeZero = f.number() != 0;
  for (int n = f.number(); n > 0; --n) r.trained.gone.push_back(f.text());
  return r;
}

FailureTable decodeFailures(const std::string& value) {
  FailureTable table;
  std::istringstream lines(value);
  std::string line, name;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    if (!(words >> name)) continue;
    int round = 0;
    while (words >> round) table[name].push_back(round);
  }
  return table;
}

std::string encodeFailures(const FailureTable& table) {
  std::string out;
  for (const auto& [name, rounds] : table) {
    out += name;
    for (int r : rounds) out += " " + std::to_string(r);
    out += "\n";
  }
  return out;
}

RoundPlan planRound(const std::vector<NodeRecord>& arrivals, const FailureTable& failures,
                    int round, int minNodes) {
  RoundPlan plan;
  std::vector<bool> left = leftOut(arrivals, failures, round, minNodes, plan.rejoinRound);
  plan.nodeRank.assign(arrivals.size(), -1);
  plan.firstRank.assign(arrivals.size(), 0);
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (left[i]) plan.excluded.push_back(arrivals[i].name);
  }
  std::vector<size_t> order = memberOrder(arrivals, left);
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const NodeRecord& r = arrivals[order[rank]];
    plan.nodeRank[order[rank]] = static_cast<int>(rank);
    plan.firstRank[order[rank]] = plan.worldSize;
    plan.worldSize += r.nproc;
    if (rank < kMaxSuccessors) plan.successors.push_back({r.host, r.standbyPort, r.name});
  }
  plan.numNodes = static_cast<int>(order.size());
  plan.master = order.at(0);
  return plan;
}

std::optional<std::string> fencedBy(const std::vector<NodeRecord>& arrivals, int round) {
  int last = -1, nodes = 0;
  for (const NodeRecord& r : arrivals) {
    if (r.trained.round > last) {
      last = r.trained.round;
      nodes = r.trained.numNodes;
    }
  }
  if (last < 0) return std::nullopt;
  std::set<std::string> present, gone;
  std::vector<std::string> trained;
  bool nodeZero = false;
  for (const NodeRecord& r : arrivals) present.insert(r.name);
  for (const NodeRecord& r : arrivals) {
    if (r.trained.round != last) continue;
    trained.push_back(r.name);
    nodeZero = nodeZero || r.trained.wasNodeZero;
    for (const std::string& name : r.trained.gone) {
      if (!present.count(name)) gone.insert(name);
    }
  }
  const int c = static_cast<int>(trained.size());
  const int alive = nodes - static_cast<int>(gone.size());
  if (2 * c > alive || (2 * c == alive && nodeZero)) return std::nullopt;
  return fmt::format(
      "round {} is fenced: {} of the {} nodes of round {} ({}) reach this rendezvous store, {} "
      "of the others are gone for sure; the rest may be training beyond a network partition, "
      "so this side stops (a round goes on with more than half of the last round's nodes not "
      "known gone, or half of them with its node rank 0)",
      round, c, nodes, last, join(trained, ", "), gone.size());
}

ElasticOutcome outcomeFor(const RoundPlan& plan, const std::vector<NodeRecord>& arrivals,
                          size_t index, int round) {
  ElasticOutcome out;
  out.round = round;
  out.numNodes = plan.numNodes;
  if (plan.nodeRank[index] < 0) {
    out.status = ElasticStatus::kExcluded;
    out.rejoinRound = plan.rejoinRound[index];
    return out;
  }
  out.status = ElasticStatus::kJoined;
  out.nodeRank = plan.nodeRank[index];
  out.firstRank = plan.firstRank[index];
  out.worldSize = plan.worldSize;
  out.masterAddr = arrivals[plan.master].host;
  out.successors = plan.successors;
  out.excluded = plan.excluded;
  return out;
}

std::string encodeOutcome(const ElasticOutcome& o) {
  if (o.status == ElasticStatus::kExcluded) {
    return fmt::format("excluded\n{}\n{}", o.rejoinRound, o.numNodes);
  }
  std::string out =
      fmt::format("joined\n{}\n{}\n{}\n{}\n{}\n{}\n{}", o.nodeRank, o.firstRank, o.numNodes,
                  o.worldSize, o.masterPort, o.masterAddr, o.successors.size());
  for (const StoreCandidate& c : o.successors) {
    out += fmt::format("\n{}\n{}\n{}", c.host, c.port, c.name);
  }
  out += fmt::format("\n{}", o.excluded.size());
  for (const std::string& name : o.excluded) out += "\n" + name;
  return out;
}

std::string encodeFailure(const std::string& message) { return "failed\n" + message; }

ElasticOutcome decodeOutcome(const std::string& value, int round) {
  Fields f(value, "rendezvous outcome");
  std::string kind = f.text();
  if (kind == "failed") throw RendezvousError(value.substr(kind.size() + 1));
  ElasticOutcome o;
  o.round = round;
  if (kind == "excluded") {
    o.status = ElasticStatus::kExcluded;
    o.rejoinRound = f.number();
    o.numNodes = f.number();
    return o;
  }
  if (kind != "joined") f.fail();
  o.status = ElasticStatus::kJoined;
  o.nodeRank = f.number();
  o.firstRank = f.number();
  o.numNodes = f.number();
  o.worldSize = f.number();
  o.masterPort = f.number();
  o.masterAddr = f.text();
  for (int n = f.number(); n > 0; --n) o.successors.push_back({f.text(), f.number(), f.text()});
  for (int n = f.number(); n > 0; --n) o.excluded.push_back(f.text());
  return o;
}

}  // namespace detail
}  // namespace distrun::rdzv
