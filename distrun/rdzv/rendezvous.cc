#include "distrun/rdzv/rendezvous.h"

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/rdzv/socket.h"

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

void claim(Store& store, int round, const RendezvousConfig& config) {
  long long claims = store.add(roundKey(round, fmt::format("claim/{}", config.nodeRank)), 1);
  if (claims > 1) {
    throw RendezvousError(
        fmt::format("node rank {} joined round {} twice (again from {}): give every "
                    "agent its own --node-rank",
                    config.nodeRank, round, config.host));
  }
}

[[noreturn]] void reportMissing(Store& store, int round, const RendezvousConfig& config) {
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

// Run by the last agent to arrive: every node is published, so it assigns
// each node's first rank and publishes the world's summary. Two batches
// (one round trip each, however many nodes); each node's first rank is set
// before the summary, so that an agent waiting on the summary finds its own
// first rank at once.
void assignRanks(Store& store, int round, int numNodes) {
  StoreBatch read;
  for (int r = 0; r < numNodes; ++r) read.tryGet(roundKey(round, fmt::format("node/{}", r)));
  read.tryGet(roundKey(round, "master_port"));
  std::vector<std::optional<std::string>> nodes = store.run(read, milliseconds::max());
  StoreBatch write;
  int next = 0;
  for (int r = 0; r < numNodes; ++r) {
    write.set(roundKey(round, fmt::format("first/{}", r)), std::to_string(next));
    next += decodeNode(r, nodes.at(static_cast<size_t>(r)).value()).nproc;
  }
  std::string masterHost = decodeNode(0, nodes.at(0).value()).host;
  write.set(roundKey(round, "world"),
            fmt::format("{} {} {}", next, nodes.back().value(), masterHost));
  store.run(write, milliseconds::max());
}

// Publishes this node (node 0: and its MASTER_PORT) and counts it in, in one
// round trip; true when it is the last to arrive.
bool publish(Store& store, int round, const RendezvousConfig& config, Clock::time_point deadline) {
  StoreBatch batch;
  if (config.nodeRank == 0) {
    batch.set(roundKey(round, "master_port"), std::to_string(config.pickMasterPort()));
  }
  NodeInfo self{config.nodeRank, config.nproc, config.host};
  batch.set(roundKey(round, fmt::format("node/{}", config.nodeRank)), encodeNode(self));
  batch.add(roundKey(round, "joined"), 1);
  std::vector<std::optional<std::string>> replies = store.run(batch, timeLeft(deadline));
  if (replies.size() < batch.size()) reportMissing(store, round, config);
  return std::stoll(replies.back().value()) == config.numNodes;
}

}  // namespace

std::string roundKey(int round, const std::string& name) {
  return fmt::format("r{}/{}", round, name);
}

World soloWorld(int round, int nproc, const std::string& host, int masterPort) {
  World world;
  world.round = round;
  world.numNodes = 1;
  world.worldSize = nproc;
  world.masterAddr = host;
  world.masterPort = masterPort;
  return world;
}

World joinRound(Store& store, int round, const RendezvousConfig& config) {
  Clock::time_point deadline = Clock::now() + config.joinTimeout;
  claim(store, round, config);
  if (publish(store, round, config, deadline)) assignRanks(store, round, config.numNodes);
  StoreBatch wait;
  wait.get(roundKey(round, "world")).get(roundKey(round, fmt::format("first/{}", config.nodeRank)));
  std::vector<std::optional<std::string>> replies = store.run(wait, timeLeft(deadline));
  if (replies.size() < wait.size()) reportMissing(store, round, config);
  const std::string& summary = replies[0].value();
  World world;
  world.round = round;
  world.numNodes = config.numNodes;
  world.nodeRank = config.nodeRank;
  size_t a = summary.find(' '), b = summary.find(' ', a + 1);
  world.worldSize = std::stoi(summary.substr(0, a));
  world.masterPort = std::stoi(summary.substr(a + 1, b - a - 1));
  world.masterAddr = summary.substr(b + 1);
  world.firstRank = std::stoi(replies[1].value());
  return world;
}

}  // namespace distrun::rdzv
