#pragma once

// The flows of a merged trace: which ranks recorded each collective, so
// that rank 0's event can point to every other rank's.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "distrun/trace_merge/trace_lines.h"

namespace distrun::trace_merge {

// One collective of one run of the job: (args.comm, args.seq) count from 0
// again in each restart round, so the round is part of it.
struct CollectiveKey {
  int round = 0;  // the header's "restart"
  int64_t comm = 0;
  int64_t seq = 0;
  bool operator==(const CollectiveKey&) const = default;
};

struct CollectiveKeyHash {
  size_t operator()(const CollectiveKey& k) const;
};

// One end of a flow to write beside an event.
struct FlowEnd {
  uint64_t id = 0;
  bool start = false;  // "s" on rank 0's event; else "f" on the other rank's
};

// How many (rank 0, rank R) pairs of one collective the trace holds, and
// how many lack a side: a rank that recorded a collective rank 0 did not
// (or the reverse, among the ranks that ran that round).
struct FlowCounts {
  uint64_t pairs = 0;
  uint64_t missing = 0;
};

// Filled while the files are scanned, read while they are written. Holds a
// small record per collective, never the events. Not thread-safe.
class CollectiveIndex {
 public:
  // Pass 1: `rank` recorded the collective `key`.
  void add(const CollectiveKey& key, int rank);
  // Between the passes: the ranks that ran each round (any rank with a
  // part whose header has that "restart") and the highest rank of all,
  // which makes the flow ids unique.
  FlowCounts count(const std::map<int, std::set<int>>& ranksByRound, int maxRank);

  // Pass 2: the flow ends to write beside `rank`'s event of `key`: for
  // rank 0 a start towards each other rank that recorded it, for another
  // rank the end from rank 0; nothing when the other side is missing, and
  // nothing for a second event of the same rank and collective.
  std::vector<FlowEnd> flowsFor(const CollectiveKey& key, int rank);

 private:
  struct Ranks {
    uint64_t number = 0;  // in the order first seen
    std::vector<bool> recorded;
    std::vector<bool> linked;
  };
  std::unordered_map<CollectiveKey, Ranks, CollectiveKeyHash> collectives_;
  uint64_t stride_ = 1;
};

// The communicator number given to a PyTorch export's collectives, which
// count in the order each rank's export holds them.
inline constexpr int64_t kTorchComm = -1;

// The name of a collective's flow: "comm 0 #17", "comm 0 #17 (restart 1)",
// "torch #3".
std::string flowName(const CollectiveKey& key);

}  // namespace distrun::trace_merge
