#pragma once

#include <optional>
#include <set>
#include <string>

#include "distrun/launch/failure_report.h"

namespace distrun::launch {

// The ranking of one round's failures into its root cause (docs/launcher.md,
// "Supervision"), apart from when the Supervisor stops or waits: what every
// node reads in the store's one event order, so every node settles on the
// same cause.
//
// - a cause (a worker's own error, isEcho false in failure_cause.h) or a lost
//   node outranks every echo (a failure that only lost its peer);
// - among causes the first in the store's order wins, unless a later one
//   raised its exception before it (raisedBefore: torchrun's order);
// - a lost node counts only when it came before any cause, and no cause
//   displaces it;
// - echoes decide only when no cause ever comes (settleOnEcho): then the
//   first echo is the root cause.
// A plain value, one per round; no clock, no store.
class RootCause {
 public:
  // What a failure read from the store did to the ranking.
  enum class Taken {
    kFirst,      // it is the round's first cause
    kCorrected,  // it raised before the cause it replaces
    kIgnored,    // a cause or a lost node came before it
  };

  // A cause read from the store (not an echo).
  Taken takeCause(const WorkerFailure& failure);
  // An echo read from the store; false when a cause or a lost node came
  // before it (then it is not even counted for echoNote).
  bool takeEcho(const WorkerFailure& echo);
  // A node's agent is gone; false when a cause or a lost node came first.
  bool takeLostNode(const std::string& node);
  // No cause came and every node's workers exited: the first echo is the
  // root cause. False when a cause or a lost node decides, or no echo came.
  bool settleOnEcho();

  // This node published a failure of its own: an echo or a cause.
  void publishedHere(bool echo);

  // The round's root cause so far, and the lost node that came before any.
  const std::optional<WorkerFailure>& cause() const { return cause_; }
  const std::optional<std::string>& lostNode() const { return lostNode_; }
  // Something decides the round: a cause read from the store, or a lost node.
  bool decided() const { return cause_ || lostNode_; }
  // An echo is known (read, or published here) and nothing decides yet.
  bool echoAwaitsCause() const;
  // The cause has no exception of its own (raised false): on a job of
  // several nodes an earlier exception of another node may still correct it.
  bool correctable(int numNodes) const;
  // Whether `exit`, reaped here after the workers were stopped, raised
  // before the cause and so replaces it once published.
  bool correctedBy(const WorkerFailure& exit) const;

  // The report's line under the cause `f`: the ranks that failed before it
  // only because they lost a peer, or, when `f` is itself an echo, that no
  // rank reported an error of its own. Empty when there is nothing to say.
  std::string echoNote(const WorkerFailure& f) const;

 private:
  std::optional<WorkerFailure> cause_;
  std::optional<std::string> lostNode_;
  std::optional<WorkerFailure> firstEcho_;  // in the store's order
  std::set<int> echoRanks_;                 // ranks that failed first only as echoes
  bool echoedHere_ = false;                 // this node published an echo
  bool causedHere_ = false;                 // this node published a cause
};

}  // namespace distrun::launch
