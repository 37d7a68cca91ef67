// The Supervisor's part for --hang-timeout (docs/launcher.md, "Hung
// workers"), apart from the rest of its decisions.
#include "distrun/launch/supervisor.h"

namespace distrun::launch {

using Kind = JobEvent::Kind;

// Hung workers: the judgement is the HangWatch's; a node answers once,
// and every node that reaches the verdict publishes it as the failure (the
// first one in the store's order is the root cause, as for any failure).
Actions Supervisor::progressSampled(const std::vector<WorkerProgress>& workers, TimePoint now) {
  if (phase_ != Phase::kRunning || config_.hangTimeout.count() <= 0) return {};
  Actions out;
  if (state_.hang.sample(workers, config_.hangTimeout, now)) out = publishHangAnswer();
  for (Action& a : hangVerdict(now)) out.push_back(std::move(a));
  return out;
}

Actions Supervisor::hangPublished(const HangAnswer& answer, TimePoint now) {
  if (phase_ != Phase::kRunning) return {};
  Actions out;
  if (!state_.hang.answered()) out = publishHangAnswer();
  state_.hang.take(answer, now);
  for (Action& a : hangVerdict(now)) out.push_back(std::move(a));
  return out;
}

Actions Supervisor::publishHangAnswer() {
  HangAnswer answer = state_.hang.answer(config_.layout.nodeRank);
  if (answer.worker && !config_.python.empty())
    answer.worker->python = config_.python + " (" + config_.pythonSource + ")";
  return {PublishEvent{JobEvent{Kind::kHang, answer.toJson()}}};
}

Actions Supervisor::hangVerdict(TimePoint now) {
  std::optional<WorkerFailure> hung = state_.hang.verdict(config_.layout.numNodes, now);
  if (!hung) return {};
  return {PublishEvent{JobEvent{Kind::kFailure, hung->toJson()}}};
}

}  // namespace distrun::launch
