#include "distrun/launch/restart_policy.h"

#include <utility>

#include <fmt/format.h>

namespace distrun::launch {

namespace {

std::string failed(const WorkerFailure& f) {
  return fmt::format("rank {} failed ({})", f.rank, f.cause());
}

}  // namespace

RestartPolicy::RestartPolicy(int maxRestarts, std::optional<int> maxNodes)
    : maxRestarts_(maxRestarts), maxNodes_(maxNodes) {}

NextRound RestartPolicy::after(const RoundEnd& end) {
  return elastic() ? afterElasticRound(end) : afterFixedRound(end);
}

bool RestartPolicy::reformsForWaitingNode(int numNodes) const {
  return elastic() && numNodes < *maxNodes_;
}

NextRound RestartPolicy::afterFixedRound(const RoundEnd& end) {
  const auto& cause = end.cause.cause();
  if (!cause || restarts_ >= maxRestarts_) return {};
  return grant(NextRound::Kind::kRestart, failed(*cause));
}

NextRound RestartPolicy::afterElasticRound(const RoundEnd& end) {
  const auto& cause = end.cause.cause();
  const auto& lostNode = end.cause.lostNode();
  if (end.signal != 0 || (end.complete && !cause)) return {};
  if (cause || lostNode || end.storeLost) {
    if (restarts_ >= maxRestarts_) return {};
    NextRound next =
        grant(NextRound::Kind::kReform, cause      ? failed(*cause)
                                        : lostNode ? fmt::format("node {} was lost", *lostNode)
                                                   : "the rendezvous store was lost");
    next.storeFirst = end.storeLost;
    return next;
  }
  if (end.waitingNode) {
    return grant(NextRound::Kind::kReform, fmt::format("node {} waits to join", *end.waitingNode),
                 false);
  }
  return {};
}

NextRound RestartPolicy::grant(NextRound::Kind kind, std::string why, bool countsRestart) {
  if (countsRestart) ++restarts_;
  NextRound next;
  next.kind = kind;
  next.why = std::move(why);
  next.countsRestart = countsRestart;
  return next;
}

}  // namespace distrun::launch
