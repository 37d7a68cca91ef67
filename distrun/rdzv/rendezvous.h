#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "distrun/rdzv/store.h"

namespace distrun::rdzv {

// One agent's entry in a round of rendezvous.
struct NodeInfo {
  int nodeRank = 0;
  int nproc = 1;     // workers this node starts
  std::string host;  // where other nodes reach it
};

// What every agent agrees on after a round: the size of the world, this
// node's first global rank (nodes in node-rank order, ranks contiguous on a
// node), and where the workers' own store (MASTER_ADDR:MASTER_PORT) is.
struct World {
  int round = 0;
  int numNodes = 0;
  int worldSize = 0;
  int firstRank = 0;  // of this node
  std::string masterAddr;
  int masterPort = 0;
  int nodeRank = 0;  // this node's, in this round (last: tests list the others)
  // The restarts before this round (TORCHELASTIC_RESTART_COUNT), the same
  // on every node: set by the agent's Supervisor, not by the rendezvous.
  int restarts = 0;
};

struct RendezvousConfig {
  int nodeRank = 0;
  int numNodes = 1;
  int nproc = 1;
  std::string host;  // this node's address as others should use it
  std::chrono::milliseconds joinTimeout{std::chrono::seconds(300)};
  // Node 0 only: a port free for rank 0's store on this node.
  std::function<int()> pickMasterPort;
};

// Joins round `round`: publishes this node, waits for every other one and
// for node 0's choice of MASTER_PORT. Linear in the node count: each agent
// makes a constant number of round trips (three, after the hello), and the
// last to arrive assigns every node its ranks (two batches of N requests,
// one round trip each: StoreBatch). Throws RendezvousError when a node rank is
// claimed twice, and one naming every node still missing and the store they
// were expected to reach when the join timeout passes.
World joinRound(Store& store, int round, const RendezvousConfig& config);

// The world of a job of one node, which needs no store: its `nproc`
// workers are ranks 0 to nproc-1 and rank 0's store is at `host`:`masterPort`.
World soloWorld(int round, int nproc, const std::string& host, int masterPort);

// The store key of round `round`'s `name`, e.g. "r3/failure".
std::string roundKey(int round, const std::string& name);

}  // namespace distrun::rdzv
