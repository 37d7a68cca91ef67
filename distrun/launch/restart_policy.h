#pragma once

#include <optional>
#include <string>

#include "distrun/launch/root_cause.h"

namespace distrun::launch {

// How a round ended, as this node knows it once its workers are gone.
struct RoundEnd {
  explicit RoundEnd(const RootCause& decided) : cause(decided) {}

  const RootCause& cause;                  // a failure or a lost node, if one decided
  int signal = 0;                          // the job's terminal signal, 0 for none
  bool complete = false;                   // every node's workers exited
  bool storeLost = false;                  // the rendezvous store went away
  std::optional<std::string> waitingNode;  // elastic: a node waits to join
};

// What follows a round.
struct NextRound {
  enum class Kind {
    kEndJob,   // the job ends with the round's outcome
    kRestart,  // a fixed job restarts every worker (a new rendezvous, same nodes)
    kReform,   // an elastic job re-forms on the nodes there now
  };
  Kind kind = Kind::kEndJob;
  std::string why;            // kRestart, kReform: "rank 1 failed (exit code 3)"
  bool countsRestart = true;  // it is one of --max-restarts
  bool storeFirst = false;    // kReform: the store's successor is sought first
};

// Whether a job goes on after a round (docs/launcher.md, "Supervision" and
// "Elastic jobs"), torchrun's rules:
// - a fixed job restarts after a failure while restarts are left, and ends
//   otherwise (a signal, success, a lost node, a lost store);
// - an elastic job ends on a signal or on success; a failure, a lost node
//   or a lost store re-forms it while restarts are left (a lost store is
//   first replaced); a node waiting to join re-forms it without counting a
//   restart, while the round has fewer than MAX nodes.
// Counts the restarts it grants. A plain value; no clock, no store.
class RestartPolicy {
 public:
  // `maxNodes`: an elastic job's MAX (--nnodes MIN:MAX), unset for a fixed job.
  RestartPolicy(int maxRestarts, std::optional<int> maxNodes);

  NextRound after(const RoundEnd& end);
  // Elastic: a node waiting to join stops a round of `numNodes` nodes.
  bool reformsForWaitingNode(int numNodes) const;

  int restarts() const { return restarts_; }
  int maxRestarts() const { return maxRestarts_; }
  bool elastic() const { return maxNodes_.has_value(); }

 private:
  NextRound afterFixedRound(const RoundEnd& end);
  NextRound afterElasticRound(const RoundEnd& end);
  NextRound grant(NextRound::Kind kind, std::string why, bool countsRestart = true);

  int maxRestarts_;
  std::optional<int> maxNodes_;
  int restarts_ = 0;
};

}  // namespace distrun::launch
