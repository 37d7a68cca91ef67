#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "distrun/launch/agent_config.h"
#include "distrun/rdzv/elastic_rendezvous.h"
#include "distrun/rdzv/rendezvous.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_succession.h"

namespace distrun::launch {

// The agent's side of a round's rendezvous (docs/launcher.md, "Elastic
// jobs"): plain functions over a store connection, run on the agent's join
// thread. They throw what the rendezvous throws (RendezvousError,
// TimeoutError, ConfigError).

// What a join agreed on: the world, and for an elastic job the candidates
// that may take the store over (the first nodes of the round).
struct JoinedRound {
  rdzv::World world;
  std::vector<rdzv::StoreCandidate> successors;
  std::vector<std::string> excluded;  // nodes left out for repeated failures
};

// Whether this agent is the job's only one: a fixed job of one node, which
// meets nobody in its rendezvous (the agent's joinAlone).
bool isAloneInJob(const AgentConfig& config);

// How this node names itself in other agents' reports: its elastic name
// (its address), else "R (HOST)" with its fixed node rank.
std::string nodeLabel(const AgentConfig& config);

// Joins the first round from `round` on that takes this node in: a round
// closed or full when it arrives makes it announce itself there (a
// kNodeWaiting event, so that the members re-form with it) and try the
// next; a round that leaves it out (repeated failures) makes it wait for
// the round it may rejoin. A fixed job joins `round` (rdzv::joinRound).
// Then leaves this node's will with `store`: should its connection close
// without a goodbye, the store publishes this node's kNodeLost event in the
// round joined.
// Then, on every node but the world's first, checks that MASTER_ADDR is
// reachable from here (checkMasterReachable).
// `trained`: the round this node last trained in, for an elastic round's
// fencing (rdzv::detail::fencedBy).
JoinedRound joinRoundOf(rdzv::StoreClient& store, int round, const AgentConfig& config,
                        int standbyPort, const std::function<int()>& pickMasterPort,
                        const rdzv::TrainedRound& trained = {});

// How long checkMasterReachable waits for an answer: a host whose address
// no neighbour owns is "No route to host" after about 3 s.
inline constexpr std::chrono::seconds kMasterProbeTimeout{5};

// Rank 0's store will listen at the world's MASTER_ADDR:MASTER_PORT, and
// this node's workers must reach it. A connection there refused (nothing
// listens yet) or accepted (closed at once) says they will; no route, or
// no answer within `timeout`, is a ConfigError naming the address, what it
// resolves to here and this node, before any worker starts (a worker would
// wait for it up to PyTorch's 30-minute time-out); so is a MASTER_ADDR that
// does not resolve here.
void checkMasterReachable(const rdzv::World& world, const AgentConfig& config,
                          std::chrono::milliseconds timeout = kMasterProbeTimeout);

}  // namespace distrun::launch
