// The Supervisor's ranking of root causes over echoes (docs/launcher.md,
// "Supervision"): a worker's own error outranks a failure that only lost
// its peer (failure_cause.h), and every node settles on the same one.
#include "distrun/launch/supervisor.h"

#include <csignal>

#include <fmt/format.h>

#include "distrun/common/strings.h"
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
  if (!isEcho(failure)) {
    state_.causePublished = true;
    if (elastic()) out.push_back(RecordNodeFailure{});
  }
  if (!config_.python.empty()) failure.python = config_.python + " (" + config_.pythonSource + ")";
  out.push_back(PublishEvent{JobEvent{Kind::kFailure, failure.toJson()}});
  return out;
}

// An echo is known and nothing else decides the round yet.
bool Supervisor::awaitingCause() const {
  const RoundState& s = state_;
  return (s.echoed || s.firstEcho) && !s.rootCause && !s.causePublished && !s.complete &&
         s.signal == 0 && s.lost.empty() && !s.lostNode;
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
  state_.echoed = true;
  Actions out = publishFailure(echo);
  if (awaitingCause()) append(out, armCauseWait(now));
  return out;
}

Actions Supervisor::echoPublished(const WorkerFailure& echo, TimePoint now) {
  if (state_.rootCause || state_.lostNode) return {};  // a cause outranks every echo
  if (!state_.firstEcho) state_.firstEcho = echo;
  state_.echoRanks.insert(echo.rank);
  if (!awaitingCause()) return {};
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
  return s.rootCause && !raised(*s.rootCause) && config_.layout.numNodes > 1 && !s.complete &&
         !s.correctionClosed && s.signal == 0 && s.lost.empty() && !s.lostNode;
}

Actions Supervisor::awaitCorrection(TimePoint now) {
  if (!correctable()) return {};
  state_.correctionUntil = now + 2 * kCauseWait + config_.termTimeout;
  return {WakeAt{*state_.correctionUntil}};
}

// A worker stopped for another's failure, whose own exception came first:
// published, every node takes it as the root cause (failurePublished).
bool Supervisor::correctsTheCause(const WorkerFailure& exit) const {
  return phase_ == Phase::kStopping && state_.rootCause && raisedBefore(exit, *state_.rootCause);
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
  if (state_.rootCause || state_.lostNode || !state_.firstEcho) return {};
  state_.rootCause = state_.firstEcho;
  return allExited() ? Actions{} : stopWorkers(now);
}

// The report's last line: the ranks that failed first only because they
// lost a peer, or, when only such ranks failed, that the cause is unknown.
std::string Supervisor::echoNote(const WorkerFailure& f) const {
  if (isEcho(f)) {
    return fmt::format(
        "distrun: rank {} only lost a peer, and no rank reported an error of its own: the rank "
        "it lost was probably killed from outside or lost its host\n",
        f.rank);
  }
  std::vector<std::string> ranks;
  for (int r : state_.echoRanks) {
    if (r != f.rank) ranks.push_back(std::to_string(r));
  }
  if (ranks.empty()) return "";
  return fmt::format("distrun: {} {} failed before it only because {} lost a peer: not the cause\n",
                     ranks.size() == 1 ? "rank" : "ranks", distrun::join(ranks, ", "),
                     ranks.size() == 1 ? "it" : "they");
}

}  // namespace distrun::launch
