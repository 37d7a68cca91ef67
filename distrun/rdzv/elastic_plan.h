#pragma once

// The pure parts of the elastic rendezvous (elastic_rendezvous.h): what
// agents write to the store and how the closing agent plans a round. No
// I/O; unit-tested on their own.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distrun/rdzv/elastic_rendezvous.h"

namespace distrun::rdzv::detail {

// What an arriving agent publishes about its node ("e<round>/node/<i>").
struct NodeRecord {
  int nproc = 1;
  int preferredNodeRank = -1;      // -1: none
  std::string preferredRankScope;  // whose numbering it is (a Slurm step)
  int standbyPort = 0;
  std::string host;
  std::string name;
  TrainedRound trained = {};  // the last round it trained in
};

// Fields separated by newlines (no field holds one: hosts and names are
// checked for white space). decodeRecord throws RendezvousError naming the
// value when it is not a record.
std::string encodeRecord(const NodeRecord& record);
NodeRecord decodeRecord(const std::string& value);

// The failure table ("e/failures"): each node's failed rounds, one line per
// node ("name round round ..."). decodeFailures skips what it cannot read:
// the table only ever leaves nodes out, never stops a round.
using FailureTable = std::map<std::string, std::vector<int>>;
FailureTable decodeFailures(const std::string& value);
std::string encodeFailures(const FailureTable& table);

// A round as its closer plans it, per arrival (0-based: arrival i of the
// protocol is index i - 1).
struct RoundPlan {
  int numNodes = 0;                        // members taken in
  int worldSize = 0;                       // their workers
  size_t master = 0;                       // the arrival that is node rank 0
  std::vector<int> nodeRank;               // -1: excluded
  std::vector<int> firstRank;              // of each member
  std::vector<int> rejoinRound;            // of each excluded arrival
  std::vector<StoreCandidate> successors;  // first kMaxSuccessors in node-rank order
  std::vector<std::string> excluded;       // names, in arrival order
};

// Plans round `round` of `arrivals` (non-empty): leaves out the nodes
// excludedUntil() names unless that would leave fewer than `minNodes`;
// orders the members by preferredNodeRank when every member has one and all
// of one preferredRankScope (ties by arrival), else by arrival; ranks
// contiguous per node in that order.
RoundPlan planRound(const std::vector<NodeRecord>& arrivals, const FailureTable& failures,
                    int round, int minNodes);

// Fencing: why round `round` of `arrivals` (its members) may not form, or
// nullopt when it may. R is the latest round any arrival trained in, L its
// node count, G its nodes known gone for sure (the union of the arrivals'
// lists, less the arrivals), c the arrivals that trained in R. It forms when
// 2c > L - |G|, or 2c = L - |G| with R's node rank 0 among them; always
// when no arrival trained yet. Two sides of a partition never both pass
// (they share R, a node gone for sure is on neither, R's node 0 on one).
std::optional<std::string> fencedBy(const std::vector<NodeRecord>& arrivals, int round);

// Arrival `index`'s outcome in `plan` (kJoined or kExcluded), its master
// port still to be filled in.
ElasticOutcome outcomeFor(const RoundPlan& plan, const std::vector<NodeRecord>& arrivals,
                          size_t index, int round);

// An outcome as the closer publishes it ("e<round>/out/<i>"), or a failure
// of the round (decodeOutcome then throws RendezvousError with `message`).
std::string encodeOutcome(const ElasticOutcome& outcome);
std::string encodeFailure(const std::string& message);
ElasticOutcome decodeOutcome(const std::string& value, int round);

}  // namespace distrun::rdzv::detail
