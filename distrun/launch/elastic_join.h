#pragma once

#include <functional>
#include <string>
#include <vector>

#include "distrun/launch/agent_config.h"
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
JoinedRound joinRoundOf(rdzv::StoreClient& store, int round, const AgentConfig& config,
                        int standbyPort, const std::function<int()>& pickMasterPort);

}  // namespace distrun::launch
