#include "distrun/launch/root_cause.h"

#include <vector>

#include <fmt/format.h>

#include "distrun/common/strings.h"
#include "distrun/launch/failure_cause.h"

namespace distrun::launch {

RootCause::Taken RootCause::takeCause(const WorkerFailure& failure) {
  if (!decided()) {
    cause_ = failure;
    return Taken::kFirst;
  }
  if (cause_ && raisedBefore(failure, *cause_)) {
    echoRanks_.insert(cause_->rank);  // it failed first, because of this one
    cause_ = failure;
    return Taken::kCorrected;
  }
  return Taken::kIgnored;
}

bool RootCause::takeEcho(const WorkerFailure& echo) {
  if (decided()) return false;  // a cause outranks every echo
  if (!firstEcho_) firstEcho_ = echo;
  echoRanks_.insert(echo.rank);
  return true;
}

bool RootCause::takeLostNode(const std::string& node) {
  if (decided()) return false;
  lostNode_ = node;
  return true;
}

bool RootCause::settleOnEcho() {
  if (decided() || !firstEcho_) return false;
  cause_ = firstEcho_;
  return true;
}

void RootCause::publishedHere(bool echo) { (echo ? echoedHere_ : causedHere_) = true; }

bool RootCause::echoAwaitsCause() const {
  return (echoedHere_ || firstEcho_) && !decided() && !causedHere_;
}

bool RootCause::correctable(int numNodes) const {
  return cause_ && !raised(*cause_) && numNodes > 1;
}

bool RootCause::correctedBy(const WorkerFailure& exit) const {
  return cause_ && raisedBefore(exit, *cause_);
}

std::string RootCause::echoNote(const WorkerFailure& f) const {
  if (isEcho(f)) {
    return fmt::format(
        "distrun: rank {} only lost a peer, and no rank reported an error of its own: the rank "
        "it lost was probably killed from outside or lost its host\n",
        f.rank);
  }
  std::vector<std::string> ranks;
  for (int r : echoRanks_) {
    if (r != f.rank) ranks.push_back(std::to_string(r));
  }
  if (ranks.empty()) return "";
  return fmt::format("distrun: {} {} failed before it only because {} lost a peer: not the cause\n",
                     ranks.size() == 1 ? "rank" : "ranks", distrun::join(ranks, ", "),
                     ranks.size() == 1 ? "it" : "they");
}

}  // namespace distrun::launch
