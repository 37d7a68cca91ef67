#include "distrun/rdzv/rendezvous.h"

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::rdzv {

namespace {

using std::chrono::milliseconds;

std::string encodeNode(const NodeInfo& n) { return fmt::format("{} {}", n.nproc, n.host); }

NodeInfo decodeNode(int rank, const std::string& value) {
  size_t space = value.find(' ');
  NodeInfo n;
  n.nodeRank = rank;
  n.nproc = std::stoi(value.substr(0, space));
  n.host = value.substr(space + 1);
  return n;
}

void claim(StoreClient& store, int round, const RendezvousConfig& config) {
  long long claims = store.add(roundKey(round, fmt::format("claim/{}", config.nodeRank)), 1);
  if (claims > 1) {
    throw RendezvousError(
        fmt::format("node rank {} joined round {} twice (again from {}): give every "
                    "agent its own --node-rank",
                    config.nodeRank, round, config.host));
  }
}

[[noreturn]] void reportMissing(StoreClient& store, int round, const RendezvousConfig& config) {
  std::vector<std::string> missing, joined;
  for (int r = 0; r < config.numNodes; ++r) {
    bool here = store.tryGet(roundKey(round, fmt::format("node/{}", r))).has_value();
    (here ? joined : missing).push_back(std::to_string(r));
  }
  throw RendezvousError(
      fmt::format("node(s) {} of {} did not join within {} s; they were expected to reach "
                  "the rendezvous store at {} (joined: {})",
                  join(missing, ", "), config.numNodes, config.joinTimeout.count() / 1000,
                  store.address(), joined.empty() ? "none" : join(joined, ", ")));
}

std::string waitFor(StoreClient& store, int round, const std::string& name,
                    Clock::time_point deadline, const RendezvousConfig& config) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  std::optional<std::string> value =
      store.get(roundKey(round, name), std::max(left, milliseconds(0)));
  if (!value) reportMissing(store, round, config);
  return *value;
}

// Run by the last agent to arrive: every node is published, so it assigns
// each node's first rank and publishes the world's summary.
void assignRanks(StoreClient& store, int round, int numNodes) {
  int next = 0;
  std::string masterHost;
  for (int r = 0; r < numNodes; ++r) {
    NodeInfo n = decodeNode(r, *store.tryGet(roundKey(round, fmt::format("node/{}", r))));
    if (r == 0) masterHost = n.host;
    store.set(roundKey(round, fmt::format("first/{}", r)), std::to_string(next));
    next += n.nproc;
  }
  std::string port = *store.tryGet(roundKey(round, "master_port"));
  store.set(roundKey(round, "world"), fmt::format("{} {} {}", next, port, masterHost));
}

}  // namespace

std::string roundKey(int round, const std::string& name) {
  return fmt::format("r{}/{}", round, name);
}

World joinRound(StoreClient& store, int round, const RendezvousConfig& config) {
  Clock::time_point deadline = Clock::now() + config.joinTimeout;
  claim(store, round, config);
  NodeInfo self{config.nodeRank, config.nproc, config.host};
  if (config.nodeRank == 0) {
    store.set(roundKey(round, "master_port"), std::to_string(config.pickMasterPort()));
  }
  store.set(roundKey(round, fmt::format("node/{}", config.nodeRank)), encodeNode(self));
  if (store.add(roundKey(round, "joined"), 1) == config.numNodes) {
    assignRanks(store, round, config.numNodes);
  }
  std::string summary = waitFor(store, round, "world", deadline, config);
  World world;
  world.round = round;
  world.numNodes = config.numNodes;
  world.nodeRank = config.nodeRank;
  size_t a = summary.find(' '), b = summary.find(' ', a + 1);
  world.worldSize = std::stoi(summary.substr(0, a));
  world.masterPort = std::stoi(summary.substr(a + 1, b - a - 1));
  world.masterAddr = summary.substr(b + 1);
  world.firstRank =
      std::stoi(waitFor(store, round, fmt::format("first/{}", config.nodeRank), deadline, config));
  return world;
}

}  // namespace distrun::rdzv
