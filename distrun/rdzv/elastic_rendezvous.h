#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "distrun/rdzv/store_succession.h"

namespace distrun::rdzv {

class Store;

// The round a node last trained in, as fencing counts it (docs/launcher.md,
// "Fencing a partition"): round -1 before its first.
struct TrainedRound {
  int round = -1;
  int numNodes = 0;               // of that round
  bool wasNodeZero = false;       // this node was its node rank 0
  std::vector<std::string> gone;  // its nodes known gone for sure since (names)
};

// One agent's request to join a round of the elastic rendezvous
// (`--nnodes MIN:MAX`, torchrun's c10d rendezvous: node ranks by arrival).
struct ElasticJoin {
  int minNodes = 1;
  int maxNodes = 1;
  int nproc = 1;               // this node's workers
  std::string host;            // this node's address as others reach it (no spaces)
  int standbyPort = 0;         // this agent's standby store port
  std::string nodeName;        // stable name (its host name): failures and exclusion follow it
  int preferredNodeRank = -1;  // SLURM_NODEID, or -1
  // Whose numbering preferredNodeRank is: the Slurm step ("JOBID.STEPID"),
  // no white space. Every step numbers its nodes from 0, so ranks of
  // different scopes are never compared (a node of a second srun).
  std::string preferredRankScope;
  std::chrono::milliseconds joinTimeout{std::chrono::seconds(300)};  // waiting for MIN
  // After the MIN-th arrival, how long the round waits for more (up to MAX);
  // torchrun's last_call_timeout.
  std::chrono::milliseconds lastCall{std::chrono::seconds(30)};
  // Called only on the node that becomes node rank 0: a free port on its
  // host for the workers' own store (MASTER_PORT).
  std::function<int()> pickMasterPort;
  // Where this node last trained: a round forms only with a quorum of the
  // last round trained (fencing: detail::fencedBy).
  TrainedRound trained;
};

enum class ElasticStatus {
  kJoined,    // a member of the round: the fields below hold its world
  kWaiting,   // the round had closed (or was full at MAX): join round + 1
  kExcluded,  // left out for repeated failures: may join again at rejoinRound
};

struct ElasticOutcome {
  ElasticStatus status = ElasticStatus::kWaiting;
  int round = 0;
  int numNodes = 0;  // of the round (kWaiting: 0 when the round failed)
  int nodeRank = 0;
  int worldSize = 0;
  int firstRank = 0;       // ranks are contiguous per node, in node-rank order
  std::string masterAddr;  // node rank 0's host
  int masterPort = 0;      // node rank 0's pickMasterPort()
  // The store candidates: the first (up to 8) members in node-rank order.
  std::vector<StoreCandidate> successors;
  std::vector<std::string> excluded;  // names left out of this round
  int rejoinRound = 0;                // kExcluded: the first round it may join
};

// The store candidates an outcome lists at most.
inline constexpr int kMaxSuccessors = 8;

// Joins round `round` of the elastic rendezvous: arrives, waits until the
// round closes, and returns this agent's part in it. The round closes when
// MAX agents have arrived, or `lastCall` after the MIN-th arrival; an agent
// that arrives after that is kWaiting (and, when the round closed with fewer
// than MAX, announces itself: announceWaiting). Node ranks follow arrival
// order, or every member's preferredNodeRank (Slurm's ids, compacted to
// 0..N-1) when every member has one of the same preferredRankScope.
//
// Protocol (keys under "e<round>/"; docs/launcher.md, "Elastic
// rendezvous"). Each agent makes two round trips after its hello:
//   1. add("arrived", 1) -> i, its arrival (1-based).
//   2. batch{set("node/<i>", its record), get("out/<i>")}: publishes
//      nproc/preferred rank and its scope/standby port/host/name and waits
//      for its outcome.
//   and node rank 0 a third: set("master_port", pickMasterPort()).
// Closing: the MAX-th arrival at once, the MIN-th when `lastCall` passes,
// any other member when its own wait passes (joinTimeout below MIN,
// lastCall from its arrival from MIN on), adds kClosedMark (2^40) to
// "arrived". That one counter decides everything exactly once, with no
// lock: an add is atomic, so exactly one closer sees a total below two
// marks, and the members are exactly the arrivals whose add returned less
// than a mark (and at most MAX): an agent arriving after the close gets a
// total of at least a mark, so it knows at once it is kWaiting, and no
// member can be counted after the closer read the count. The closer (the
// only writer of "closed", "out/<i>" and "latest") then, in batches:
// sets "closed" = N and "latest"; reads "e/failures" and every record
// (waiting for those still on their way); plans the round (planRound: who is
// excluded, node ranks, first ranks, successors); tells node rank 0 first
// (master port unknown), waits for its "master_port", and sets every other
// "out/<i>" (one write, each waking one agent). The closer's O(N) work is
// four round trips in all, never one per node.
//
// A round that closes with fewer than MIN (an agent's joinTimeout passed)
// fails: every member and every later arrival gets RendezvousError naming
// how many of MIN joined, who, and the store's address. Throws ConfigError
// for a bad `join` (naming the field), RendezvousError/TimeoutError for the
// store's failures, and RendezvousError when the closing agent disappears
// (no outcome within twice the joinTimeout after the close). Uses `store`
// alone while it runs (a StoreClient is one thread's; its interrupt() ends
// the join with RendezvousError).
ElasticOutcome joinElasticRound(Store& store, int round, const ElasticJoin& join);

// Announces that `nodeName` waits for a round after `round` (once per name
// and round; repeating it is harmless). joinElasticRound does it itself.
void announceWaiting(Store& store, int round, const std::string& nodeName);

// How many nodes announced they wait for a round after `round` (torchrun's
// num_nodes_waiting): the members re-form when it is above zero and their
// round has fewer than MAX nodes.
long long waitingNodes(Store& store, int round);

// The latest round that closed with members, for an agent that does not
// know where the job is (a replacement node); nullopt before the first.
std::optional<int> latestRound(Store& store);

// Records that `nodeName`'s workers failed in round `round` (idempotent; any
// agent may record any node). Kept in one key, "e/failures", changed only by
// compare-and-set, so that concurrent records are never lost.
void recordNodeFailure(Store& store, int round, const std::string& nodeName);

// The exclusion rule, a pure function of a node's failed rounds: a node
// whose workers failed in two consecutive rounds (k, k+1) is excluded from
// the next 1 round (k+2); each further such pair (counted without overlap,
// the back-off never resets) excludes it for twice as long as the last: 1,
// 2, 4, ... rounds from the round after the pair. Returns the first round it
// may join again when `round` is one it is excluded from, else nullopt.
// When excluding every excluded node would leave a round with fewer than
// MIN nodes, the round takes them all in (planRound): exclusion never ends a
// job by itself; the failures that end it are reported as such.
std::optional<int> excludedUntil(std::vector<int> failedRounds, int round);

}  // namespace distrun::rdzv
