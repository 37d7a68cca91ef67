// The Supervisor's lost nodes and elastic re-forming (docs/launcher.md,
// "Elastic jobs"): a node whose agent is gone is a cause like a worker's
// own error; an elastic job re-forms on the nodes left, or with a node
// that waits to join.
#include <fmt/format.h>

#include "distrun/common/enforce.h"
#include "distrun/common/strings.h"
#include "distrun/launch/supervisor.h"

namespace distrun::launch {

bool Supervisor::endKnown() const {
  const RoundState& s = state_;
  return s.complete || s.cause.decided() || s.signal != 0 || !s.lost.empty() || s.waitingNode;
}

Actions Supervisor::nodeLostPublished(const std::string& node, TimePoint now) {
  if (!inRound()) return {};
  ++state_.lostInRound;
  lostNodes_.push_back(node);
  if (state_.complete || state_.signal != 0 || !state_.cause.takeLostNode(node)) {
    return endRoundIfOver({});  // the end is known already
  }
  Actions out{Print{fmt::format(
      "distrun: node {}: node {} was lost: its agent's connection to the store closed without "
      "a goodbye (the agent or its host died)\n",
      config_.layout.nodeRank, node)}};
  append(out, stopWorkers(now));
  return endRoundIfOver(std::move(out));
}

// Torchrun's rule: a node waiting to join makes the job re-form, while the
// round has room for it.
Actions Supervisor::nodeWaitingPublished(const std::string& node, TimePoint now) {
  if (!elastic() || phase_ != Phase::kRunning || endKnown()) return {};
  if (!restarts_.reformsForWaitingNode(config_.layout.numNodes)) return {};  // full: it waits
  state_.waitingNode = node;
  Actions out{
      Print{fmt::format("distrun: node {}: node {} waits to join: stopping the workers to "
                        "re-form the job with it\n",
                        config_.layout.nodeRank, node)}};
  append(out, stopWorkers(now));
  return endRoundIfOver(std::move(out));
}

Actions Supervisor::storeFound(const std::string& address, TimePoint) {
  DISTRUN_ENFORCE(phase_ == Phase::kFindingStore, "a store was found that was not sought");
  Actions out{Print{fmt::format("distrun: node {}: the rendezvous store is now at {}\n",
                                config_.layout.nodeRank, address)}};
  append(out, join(round_ + 1));
  return out;
}

Actions Supervisor::storeLostWhileJoining(const std::string& why, bool successorsKnown,
                                          TimePoint now) {
  DISTRUN_ENFORCE(phase_ == Phase::kJoining, "the store was lost while no round was joined");
  if (!elastic() || !successorsKnown) return rendezvousFailed(why, now);
  phase_ = Phase::kFindingStore;
  return {Print{fmt::format(
              "distrun: node {}: the rendezvous store was lost while round {} formed ({}); "
              "looking for its successor\n",
              config_.layout.nodeRank, round_, why)},
          FindStore{}};
}

Actions Supervisor::rendezvousFailed(const std::string& why, TimePoint) {
  phase_ = Phase::kEnded;
  std::string lost = lostNodes_.empty() ? ""
                                        : fmt::format("; nodes lost during the job: {}",
                                                      distrun::join(lostNodes_, ", "));
  return {EndWithError{why + lost}};
}

Actions Supervisor::endWithLostNode() {
  std::string restarts =
      elastic() ? fmt::format(", and no restart is left (--max-restarts {})", config_.maxRestarts)
                : ": a job of fixed nodes cannot go on without it (--nnodes MIN:MAX re-forms "
                  "the job on the nodes left)";
  return {LeaveJob{state_.lostInRound},
          EndWithError{fmt::format("node {}: node {} was lost (its agent's connection to the store "
                                   "closed without a goodbye){}",
                                   config_.layout.nodeRank, *state_.cause.lostNode(), restarts)}};
}

// The report's line naming every node lost, when a failure ends the job.
std::string Supervisor::lostNodesNote() const {
  if (lostNodes_.empty()) return "";
  return fmt::format("distrun: nodes lost during the job: {}\n", distrun::join(lostNodes_, ", "));
}

}  // namespace distrun::launch
