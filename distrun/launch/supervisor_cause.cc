// The Supervisor's waits for a root cause (docs/launcher.md, "Supervision"):
// an echo waits kCauseWait for a cause before the workers are stopped, and a
// cause without an exception of its own waits for a correction from another
// node. The ranking itself is RootCause's (root_cause.h).
#include "distrun/launch/supervisor.h"

#include <csignal>

#include <fmt/format.h>

#include "distrun/launch/failure_cause.h"

namespace distrun::launch {

namespace {

using Kind = JobEvent::Kind;

}  // namespace

// The failure as published, with the Python that ran it.
// (An elastic job's node also records its own cause, for the rendezvous
// that leaves out a node failing round after round.)
Actions Supervisor::publishFailure(WorkerFailure failure) {
  Actions out;
  state_.cause.publishedHere(isEcho(failure));
  if (!isEcho(failure) && elastic()) out.push_back(RecordNodeFailure{});
  if (!config_.python.empty()) failure.python = config_.python + " (" + config_.pythonSource + ")";
  out.push_back(PublishEvent{JobEvent{Kind::kFailure, failure.toJson()}});
  return out;
}

// An echo is known and nothing else decides the round yet.
bool Supervisor::awaitingCause() const {
  const RoundState& s = state_;
  return s.cause.echoAwaitsCause() && !s.complete && s.signal == 0 && s.lost.empty();
}

// A worker SIGKILLed by someone else than this agent (the OOM killer, a
// user, the scheduler) while an echo waited for its cause. The kernel
// hands a process's exit over only once its last thread has left, and a
// process's SCHED_IDLE thread (comm's IdleSpinner) gets almost no CPU
// while the node's cores are busy: the teardown of a SIGKILLed worker may
// then outlast kCauseWait, and its exit comes after the workers were
// stopped. Only a SIGKILL is certain not to answer the agent's SIGTERM.
bool Supervisor::killedFromOutside(const WorkerFailure& exit) const {
  return exit.signal == SIGKILL && !state_.killSent;
}

// A worker here lost its peer: published (every echo, for the report's
// count), but the other workers run on, so that the rank it lost can
// report its own error.
Actions Supervisor::echoExited(const WorkerFailure& echo, TimePoint now) {
  Actions out = publishFailure(echo);
  if (awaitingCause()) append(out, armCauseWait(now));
  return out;
}

Actions Supervisor::echoPublished(const WorkerFailure& echo, TimePoint now) {
  if (!state_.cause.takeEcho(echo) || !awaitingCause()) return {};
  Actions out = armCauseWait(now);
  append(out, doneIfAwaiting(now));
  return endRoundIfOver(std::move(out));
}

// Workers still run here: stop them kCauseWait after the first echo.
Actions Supervisor::armCauseWait(TimePoint now) {
  if (state_.causeWaitUntil || state_.settleArmed || allExited()) return {};
  state_.causeWaitUntil = now + kCauseWait;
  return {WakeAt{*state_.causeWaitUntil}};
}

// This node's workers have all exited while an echo waits for a cause:
// count the node done (the last one publishes "complete", after every
// cause any node published), and settle alone if that never comes.
Actions Supervisor::doneIfAwaiting(TimePoint now) {
  if (!inRound() || !allExited() || !awaitingCause() || state_.settleArmed) return {};
  state_.settleArmed = true;
  state_.causeWaitUntil = now + 2 * kCauseWait + config_.termTimeout;
  Actions out = markDone();
  out.push_back(WakeAt{*state_.causeWaitUntil});
  return out;
}

Actions Supervisor::causeWaitPassed(TimePoint now) {
  state_.causeWaitUntil.reset();
  if (!inRound() || !awaitingCause()) return deadlinePassed(now);
  if (state_.settleArmed) return {PublishEvent{JobEvent{Kind::kComplete, ""}}};
  Actions out{Print{
      fmt::format("distrun: node {}: a rank lost its peer and no rank reported an error of its own "
                  "within {} s: stopping the workers\n",
                  config_.layout.nodeRank, kCauseWait.count())}};
  append(out, stopWorkers(now));
  return out;
}

// The root cause has no exception of its own and the job spans nodes: a
// rank of another node may have raised before it, its exit handlers still
// running while this one's collective failed (torchrun's order ranks that
// exception first). Every node then counts itself done once its workers
// have exited, and ends on "complete", after every correction its nodes
// published; or, if that never comes (a node's agent died), 10 s +
// --term-timeout after the cause.
bool Supervisor::correctable() const {
  const RoundState& s = state_;
  return s.cause.correctable(config_.layout.numNodes) && !s.complete && !s.correctionClosed &&
         s.signal == 0 && s.lost.empty();
}

Actions Supervisor::awaitCorrection(TimePoint now) {
  if (!correctable()) return {};
  state_.correctionUntil = now + 2 * kCauseWait + config_.termTimeout;
  return {WakeAt{*state_.correctionUntil}};
}

// A worker stopped for another's failure, whose own exception came first:
// published, every node takes it as the root cause (failurePublished).
bool Supervisor::correctsTheCause(const WorkerFailure& exit) const {
  return phase_ == Phase::kStopping && state_.cause.correctedBy(exit);
}

Actions Supervisor::correctionWaitPassed(TimePoint now) {
  state_.correctionUntil.reset();
  state_.correctionClosed = true;
  Actions out = endRoundIfOver({});
  append(out, deadlinePassed(now));
  return out;
}

// This node's one "done" mark of the round (the last node's publishes
// "complete"): for success, for an echo awaiting its cause, and for a
// cause another node may still correct.
Actions Supervisor::markDone() {
  if (state_.doneMarked) return {};
  state_.doneMarked = true;
  return {MarkNodeDone{}};
}

// "complete" after echoes only: every node's workers exited and no cause
// was published before it; the first echo is the root cause.
Actions Supervisor::settleOnEcho(TimePoint now) {
  if (!state_.cause.settleOnEcho() || allExited()) return {};
  return stopWorkers(now);
}

}  // namespace distrun::launch
