#include "distrun/launch/elastic_join.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/launch/job_events.h"
#include "distrun/rdzv/elastic_rendezvous.h"
#include "distrun/rdzv/socket.h"

namespace distrun::launch {

namespace {

rdzv::ElasticJoin elasticJoinOf(const AgentConfig& c, int standbyPort,
                                const std::function<int()>& pickMasterPort,
                                const rdzv::TrainedRound& trained) {
  const ElasticSpec& e = *c.elastic;
  rdzv::ElasticJoin join;
  join.minNodes = e.minNodes;
  join.maxNodes = e.maxNodes;
  join.nproc = c.layout.localWorldSize;
  join.host = c.host;
  join.standbyPort = standbyPort;
  join.nodeName = e.nodeName;
  join.preferredNodeRank = e.preferredNodeRank.value_or(-1);
  join.preferredRankScope = e.preferredRankScope;
  join.joinTimeout = c.joinTimeout;
  join.lastCall = e.lastCall;
  join.pickMasterPort = pickMasterPort;
  join.trained = trained;
  return join;
}

JoinedRound joinedOf(const rdzv::ElasticOutcome& o) {
  rdzv::World w{o.round, o.numNodes, o.worldSize, o.firstRank, o.masterAddr, o.masterPort};
  w.nodeRank = o.nodeRank;
  return JoinedRound{w, o.successors, o.excluded};
}

// A replacement node starts at the round the job is in, not at round 0.
JoinedRound joinElastic(rdzv::StoreClient& store, int round, const AgentConfig& config,
                        int standbyPort, const std::function<int()>& pickMasterPort,
                        const rdzv::TrainedRound& trained) {
  const rdzv::ElasticJoin join = elasticJoinOf(config, standbyPort, pickMasterPort, trained);
  int r = std::max(round, rdzv::latestRound(store).value_or(0));
  while (true) {
    const rdzv::ElasticOutcome o = rdzv::joinElasticRound(store, r, join);
    if (o.status == rdzv::ElasticStatus::kJoined) return joinedOf(o);
    if (o.status == rdzv::ElasticStatus::kWaiting) {
      publishEvent(store, r, JobEvent{JobEvent::Kind::kNodeWaiting, join.nodeName});
    }
    r = std::max(r + 1, o.status == rdzv::ElasticStatus::kExcluded ? o.rejoinRound : 0);
  }
}

JoinedRound joinFixed(rdzv::StoreClient& store, int round, const AgentConfig& config,
                      const std::function<int()>& pickMasterPort) {
  rdzv::RendezvousConfig rc{config.layout.nodeRank,       config.layout.numNodes,
                            config.layout.localWorldSize, config.host,
                            config.joinTimeout,           pickMasterPort};
  return JoinedRound{rdzv::joinRound(store, round, rc), {}, {}};
}

}  // namespace

bool isAloneInJob(const AgentConfig& config) {
  return !config.elastic && config.layout.numNodes == 1;
}

std::string nodeLabel(const AgentConfig& config) {
  if (config.elastic) return config.elastic->nodeName;
  return fmt::format("{} ({})", config.layout.nodeRank, nodeWithAddress(config));
}

JoinedRound joinRoundOf(rdzv::StoreClient& store, int round, const AgentConfig& config,
                        int standbyPort, const std::function<int()>& pickMasterPort,
                        const rdzv::TrainedRound& trained) {
  store.clearWill();  // the last round's: a join's timed waits would fire it
  JoinedRound joined = config.elastic
                           ? joinElastic(store, round, config, standbyPort, pickMasterPort, trained)
                           : joinFixed(store, round, config, pickMasterPort);
  const int r = joined.world.round;
  try {
    store.setWill(rdzv::roundKey(r, "events"), rdzv::roundKey(r, "event/"),
                  encodeEvent(JobEvent{JobEvent::Kind::kNodeLost, nodeLabel(config)}),
                  encodeEvent(JobEvent{JobEvent::Kind::kNodeDied, nodeLabel(config)}));
  } catch (const Error&) {
    // The store died as the round closed: the round's watcher reports it,
    // and an elastic job then finds the store's successor among the
    // candidates this join returned.
  }
  // After the will: should the check end this agent, the others hear of it.
  if (joined.world.nodeRank != 0) checkMasterReachable(joined.world, config);
  return joined;
}

void checkMasterReachable(const rdzv::World& world, const AgentConfig& config,
                          std::chrono::milliseconds timeout) {
  const std::string what =
      fmt::format("MASTER_ADDR {} (node 0's, where rank 0's store listens on port {})",
                  world.masterAddr, world.masterPort);
  const std::string fix = fmt::format(
      "make {} resolve to an address every node reaches (/etc/hosts, DNS), or give node 0's "
      "agent --local-addr ADDRESS",
      world.masterAddr);
  std::string address;
  try {
    address = rdzv::resolvedAddress(world.masterAddr);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{} does not resolve on {}: {}: {}", what,
                                  nodeWithAddress(config), e.what(), fix));
  }
  rdzv::ConnectAttempt a =
      rdzv::tryConnectTcp(address, world.masterPort, rdzv::Clock::now() + timeout);
  if (a.fd || a.error == ECONNREFUSED) return;
  throw ConfigError(
      fmt::format("{} is {} on {}, which cannot reach it: {}: its workers would "
                  "not reach rank 0; {}",
                  what, address, nodeWithAddress(config), std::strerror(a.error), fix));
}

}  // namespace distrun::launch
