#include "distrun/rdzv/elastic_rendezvous.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/rdzv/elastic_plan.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/store_client.h"

namespace distrun::rdzv {

namespace {

using std::chrono::milliseconds;
using namespace detail;
using Replies = std::vector<std::optional<std::string>>;

// Added to a round's arrival counter by the agent that closes it: a total
// at or above it means "closed" (the header's protocol).
constexpr long long kClosedMark = 1LL << 40;
const std::string kFailuresKey = "e/failures";
const std::string kLatestKey = "e/latest";

std::string key(int round, const std::string& name) { return fmt::format("e{}/{}", round, name); }
std::string key(int round, const char* name, long long i) {
  return fmt::format("e{}/{}/{}", round, name, i);
}

// "300", "0.25": a timeout in seconds as messages print it.
std::string seconds(milliseconds ms) {
  return fmt::format("{:g}", static_cast<double>(ms.count()) / 1000);
}

bool hasSpace(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

void checkName(const std::string& value, const char* what) {
  if (value.empty() || hasSpace(value)) {
    throw ConfigError(fmt::format(
        "elastic rendezvous: {} '{}' must be non-empty and hold no white space", what, value));
  }
}

void validate(int round, const ElasticJoin& j) {
  if (j.minNodes < 1 || j.maxNodes < j.minNodes) {
    throw ConfigError(fmt::format("elastic rendezvous: --nnodes {}:{}: expected 1 <= MIN <= MAX",
                                  j.minNodes, j.maxNodes));
  }
  if (j.nproc < 1 || round < 0 || j.preferredNodeRank < -1) {
    throw ConfigError(fmt::format(
        "elastic rendezvous: nproc {}, round {}, preferred node rank {}: expected nproc >= 1, "
        "round >= 0 and a preferred node rank >= 0 (or -1 for none)",
        j.nproc, round, j.preferredNodeRank));
  }
  checkName(j.host, "host");
  checkName(j.nodeName, "node name");
  if (hasSpace(j.preferredRankScope)) {
    throw ConfigError(
        fmt::format("elastic rendezvous: preferred rank scope '{}' must hold no white space",
                    j.preferredRankScope));
  }
  if (!j.pickMasterPort) {
    throw ConfigError("elastic rendezvous: pickMasterPort is required (node rank 0 calls it)");
  }
}

// One agent's arrival in a round.
struct Arrival {
  Store& store;
  int round;
  const ElasticJoin& join;
  long long index;  // 1-based
  Clock::time_point deadline;
  std::string record() const {
    return encodeRecord({join.nproc, join.preferredNodeRank, join.preferredRankScope,
                         join.standbyPort, join.host, join.nodeName, join.trained});
  }
};

// An agent that arrived after the close (`total` at or above the mark) or
// beyond MAX: kWaiting, announced when the round has room.
ElasticOutcome waiting(Store& store, int round, const ElasticJoin& join, long long total,
                       Clock::time_point deadline) {
  ElasticOutcome out;
  out.round = round;
  out.numNodes = join.maxNodes;
  if (total < kClosedMark) return out;  // full: the MAX-th arrival closes it
  std::optional<std::string> closed = store.get(key(round, "closed"), timeLeft(deadline));
  if (!closed) return out;
  if (closed->rfind("failed\n", 0) == 0) decodeOutcome(*closed, round);  // throws its message
  out.numNodes = std::stoi(*closed);
  if (out.numNodes < join.maxNodes) announceWaiting(store, round, join.nodeName);
  return out;
}

// Publishes the record and waits for the outcome, until the close is this
// agent's to attempt: lastCall from the MIN-th arrival on, else the join
// deadline. nullopt when that time passed.
std::optional<std::string> publishAndWait(const Arrival& a) {
  milliseconds wait = timeLeft(a.deadline);
  if (a.index >= a.join.minNodes) wait = std::min(wait, a.join.lastCall);
  StoreBatch batch;
  batch.set(key(a.round, "node", a.index), a.record()).get(key(a.round, "out", a.index));
  Replies replies = a.store.run(batch, wait);
  if (replies.size() < batch.size()) return std::nullopt;
  return replies.back();
}

// Adds the mark (publishing the record again: the batch that timed out may
// not have). The count of arrivals when this agent closed the round, or
// nullopt when another agent had closed it.
std::optional<long long> closeRound(const Arrival& a) {
  StoreBatch batch;
  batch.set(key(a.round, "node", a.index), a.record()).add(key(a.round, "arrived"), kClosedMark);
  long long total = std::stoll(a.store.run(batch, milliseconds::max()).back().value());
  if (total >= 2 * kClosedMark) return std::nullopt;
  return total - kClosedMark;
}

// Ends a round that cannot go on: tells every arrival and later ones
// (through "closed") why, then throws it.
[[noreturn]] void failRound(const Arrival& a, long long count, const std::string& message) {
  StoreBatch batch;
  batch.set(key(a.round, "closed"), encodeFailure(message));
  for (long long j = 1; j <= count; ++j) {
    if (j != a.index) batch.set(key(a.round, "out", j), encodeFailure(message));
  }
  a.store.run(batch, milliseconds::max());
  throw RendezvousError(message);
}

// The names of arrivals 1..count, as far as their records arrived.
std::vector<std::string> arrivalNames(const Arrival& a, long long count) {
  StoreBatch batch;
  for (long long j = 1; j <= count; ++j) batch.tryGet(key(a.round, "node", j));
  std::vector<std::string> names;
  Replies replies = a.store.run(batch, milliseconds::max());
  for (size_t j = 0; j < replies.size(); ++j) {
    names.push_back(replies[j] ? decodeRecord(*replies[j]).name
                               : fmt::format("(arrival {}, not yet named)", j + 1));
  }
  return names;
}

[[noreturn]] void failTooFew(const Arrival& a, long long count) {
  std::vector<std::string> names = arrivalNames(a, count);
  failRound(a, count,
            fmt::format("only {} of the {} nodes needed (--nnodes {}:{}) joined round {} within "
                        "{} s (joined: {}); they met at the rendezvous store at {}",
                        count, a.join.minNodes, a.join.minNodes, a.join.maxNodes, a.round,
                        seconds(a.join.joinTimeout), names.empty() ? "none" : join(names, ", "),
                        a.store.address()));
}

// Ends a round some of whose arrivals never published their node (the
// store holds back the replies of a batch while a get in it waits, so the
// ones missing are asked for again).
[[noreturn]] void failUnpublished(const Arrival& a, long long count) {
  StoreBatch batch;
  for (long long j = 1; j <= count; ++j) batch.tryGet(key(a.round, "node", j));
  Replies replies = a.store.run(batch, milliseconds::max());
  std::vector<std::string> missing;
  for (size_t j = 0; j < replies.size(); ++j) {
    if (!replies[j]) missing.push_back(std::to_string(j + 1));
  }
  failRound(a, count,
            fmt::format("round {} closed with {} nodes, but arrival(s) {} never published their "
                        "node within {} s (an agent that stopped while joining); the rendezvous "
                        "store is at {}",
                        a.round, count, join(missing, ", "), seconds(a.join.joinTimeout),
                        a.store.address()));
}

// Marks the round closed with `count` members and reads what the plan
// needs: the failure table and every member's record (waiting for those on
// their way).
std::vector<NodeRecord> gather(const Arrival& a, long long count, FailureTable& failures) {
  StoreBatch batch;
  batch.set(key(a.round, "closed"), std::to_string(count))
      .set(kLatestKey, std::to_string(a.round))
      .tryGet(kFailuresKey);
  for (long long j = 1; j <= count; ++j) batch.get(key(a.round, "node", j));
  Replies replies = a.store.run(batch, a.join.joinTimeout);
  if (replies.size() < batch.size()) failUnpublished(a, count);
  failures = decodeFailures(replies[2].value_or(""));
  std::vector<NodeRecord> records;
  records.reserve(static_cast<size_t>(count));
  for (size_t j = 3; j < replies.size(); ++j) records.push_back(decodeRecord(replies[j].value()));
  return records;
}

// Node rank 0's MASTER_PORT: this agent's pick when it is node rank 0, else
// node rank 0's, told its outcome first (its master port left at -1).
int masterPort(const Arrival& a, const RoundPlan& plan, const std::vector<NodeRecord>& records) {
  if (plan.master + 1 == static_cast<size_t>(a.index)) return a.join.pickMasterPort();
  StoreBatch batch;
  ElasticOutcome first = outcomeFor(plan, records, plan.master, a.round);
  first.masterPort = -1;
  batch.set(key(a.round, "out", static_cast<long long>(plan.master) + 1), encodeOutcome(first))
      .get(key(a.round, "master_port"));
  Replies replies = a.store.run(batch, a.join.joinTimeout);
  if (replies.size() < batch.size()) {
    failRound(a, static_cast<long long>(records.size()),
              fmt::format("node rank 0 of round {} ({}) did not pick its MASTER_PORT within {} s; "
                          "the rendezvous store is at {}",
                          a.round, records[plan.master].name, seconds(a.join.joinTimeout),
                          a.store.address()));
  }
  return std::stoi(replies.back().value());
}

// The closer's part: plans the round and tells every member, in one batch.
ElasticOutcome lead(const Arrival& a, long long arrived) {
  const long long count = std::min<long long>(arrived, a.join.maxNodes);
  if (count < a.join.minNodes) failTooFew(a, count);
  FailureTable failures;
  std::vector<NodeRecord> records = gather(a, count, failures);
  if (std::optional<std::string> fenced = fencedBy(records, a.round)) {
    failRound(a, count,
              fmt::format("{}; the rendezvous store is at {}", *fenced, a.store.address()));
  }
  RoundPlan plan = planRound(records, failures, a.round, a.join.minNodes);
  const int port = masterPort(a, plan, records);
  StoreBatch batch;
  for (size_t j = 0; j < records.size(); ++j) {
    if (j + 1 == static_cast<size_t>(a.index) || j == plan.master) continue;
    ElasticOutcome out = outcomeFor(plan, records, j, a.round);
    out.masterPort = port;
    batch.set(key(a.round, "out", static_cast<long long>(j) + 1), encodeOutcome(out));
  }
  a.store.run(batch, milliseconds::max());
  ElasticOutcome own = outcomeFor(plan, records, static_cast<size_t>(a.index) - 1, a.round);
  own.masterPort = port;
  return own;
}

// Node rank 0 learns it is: picks MASTER_PORT and publishes it.
ElasticOutcome finish(const Arrival& a, ElasticOutcome out) {
  if (out.status != ElasticStatus::kJoined || out.masterPort != -1) return out;
  out.masterPort = a.join.pickMasterPort();
  a.store.set(key(a.round, "master_port"), std::to_string(out.masterPort));
  return out;
}

}  // namespace

ElasticOutcome joinElasticRound(Store& store, int round, const ElasticJoin& join) {
  validate(round, join);
  const Clock::time_point deadline = Clock::now() + join.joinTimeout;
  const long long index = store.add(key(round, "arrived"), 1);
  if (index >= kClosedMark || index > join.maxNodes) {
    return waiting(store, round, join, index, deadline);
  }
  const Arrival a{store, round, join, index, deadline};
  std::optional<std::string> out;
  if (index < join.maxNodes) out = publishAndWait(a);
  if (!out) {
    if (std::optional<long long> arrived = closeRound(a)) return lead(a, *arrived);
    out = store.get(key(round, "out", index), 2 * join.joinTimeout);
  }
  if (!out) {
    throw RendezvousError(fmt::format(
        "round {} closed, but the agent that closed it published no outcome within {} s (it "
        "stopped while planning the round); the rendezvous store is at {}",
        round, seconds(2 * join.joinTimeout), store.address()));
  }
  return finish(a, decodeOutcome(*out, round));
}

void announceWaiting(Store& store, int round, const std::string& nodeName) {
  checkName(nodeName, "node name");
  if (store.add(key(round, "waiting/" + nodeName), 1) == 1) store.add(key(round, "waiting"), 1);
}

long long waitingNodes(Store& store, int round) { return store.add(key(round, "waiting"), 0); }

std::optional<int> latestRound(Store& store) {
  std::optional<std::string> latest = store.tryGet(kLatestKey);
  if (!latest) return std::nullopt;
  return std::stoi(*latest);
}

void recordNodeFailure(Store& store, int round, const std::string& nodeName) {
  checkName(nodeName, "node name");
  while (true) {
    const std::string current = store.tryGet(kFailuresKey).value_or("");
    FailureTable table = decodeFailures(current);
    std::vector<int>& rounds = table[nodeName];
    if (std::find(rounds.begin(), rounds.end(), round) != rounds.end()) return;
    rounds.push_back(round);
    std::sort(rounds.begin(), rounds.end());
    const std::string updated = encodeFailures(table);
    if (store.compareSet(kFailuresKey, current, updated) == updated) return;
  }
}

}  // namespace distrun::rdzv
