#include "distrun/launch/supervisor.h"

#include <csignal>
#include <sstream>

#include <fmt/format.h>

#include "distrun/common/enforce.h"
#include "distrun/common/exit_code.h"
#include "distrun/common/strings.h"
#include "distrun/launch/failure_cause.h"
#include "distrun/launch/worker_setup.h"

namespace distrun::launch {

namespace {

using Kind = JobEvent::Kind;

// TERM, INT, HUP, QUIT end the job; USR1 and USR2 are messages to the
// workers; CHLD only says that a child is ready to be reaped.
bool isTerminal(int signal) { return signal != SIGUSR1 && signal != SIGUSR2 && signal != SIGCHLD; }

// "25", "0.5": a grace in seconds as the user gave it.
std::string seconds(std::chrono::milliseconds ms) {
  return fmt::format("{:g}", static_cast<double>(ms.count()) / 1000.0);
}

std::string describeEvent(const JobEvent& e) {
  switch (e.kind) {
    case Kind::kFailure:
      return fmt::format("failure of rank {}", WorkerFailure::fromJson(e.payload).rank);
    case Kind::kSignal:
      return "signal " + e.payload;
    case Kind::kComplete:
      return "complete";
    case Kind::kCheckpoint:
      return "checkpoint of rank " + e.payload;
    case Kind::kStoreLost:
      return "store lost: " + e.payload;
    case Kind::kHang:
      return "hang answer " + e.payload;
    case Kind::kNodeLost:
      return "node lost: " + e.payload;
    case Kind::kNodeDied:
      return "node died: " + e.payload;
    case Kind::kNodeWaiting:
      return "node waiting: " + e.payload;
  }
  return "?";
}

// One describe() overload per action, chosen by std::visit.
struct Describe {
  std::string operator()(const JoinRendezvous& a) const {
    return fmt::format("join round {}", a.round);
  }
  std::string operator()(const InterruptRendezvous&) const { return "interrupt rendezvous"; }
  std::string operator()(const StartWorkers& a) const {
    return fmt::format("start round {}", a.world.round);
  }
  std::string operator()(const RecordNodeFailure&) const { return "record node failure"; }
  std::string operator()(const FindStore&) const { return "find store"; }
  std::string operator()(const SignalWorkers& a) const {
    return fmt::format("signal {}", a.signal);
  }
  std::string operator()(const KillWorkers&) const { return "kill"; }
  std::string operator()(const WakeAt& a) const {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(a.time.time_since_epoch());
    return fmt::format("wake at {} ms", ms.count());
  }
  std::string operator()(const PublishEvent& a) const {
    return "publish " + describeEvent(a.event);
  }
  std::string operator()(const MarkNodeDone&) const { return "mark node done"; }
  std::string operator()(const Print& a) const { return "print " + a.text; }
  std::string operator()(const EndRound&) const { return "end round"; }
  std::string operator()(const LeaveJob&) const { return "leave job"; }
  std::string operator()(const WriteFailureReport& a) const {
    return "write failure report " + a.path;
  }
  std::string operator()(const Exit& a) const { return fmt::format("exit {}", a.code); }
  std::string operator()(const EndWithError& a) const { return "error " + a.message; }
};

}  // namespace

void append(Actions& to, Actions more) {
  for (Action& a : more) to.push_back(std::move(a));
}

std::string describe(const Action& action) { return std::visit(Describe{}, action); }

Supervisor::Supervisor(AgentConfig config, int storePort)
    : config_(std::move(config)),
      storePort_(storePort),
      restarts_(config_.maxRestarts,
                config_.elastic ? std::optional<int>(config_.elastic->maxNodes) : std::nullopt) {}

Actions Supervisor::start(TimePoint) {
  DISTRUN_ENFORCE(phase_ == Phase::kIdle, "the supervisor was started twice");
  return join(0);
}

Actions Supervisor::rendezvousCompleted(const rdzv::World& world, TimePoint,
                                        const std::vector<std::string>& excluded) {
  DISTRUN_ENFORCE(phase_ == Phase::kJoining, "a rendezvous completed that was not under way");
  // An elastic node may join a later round than it asked for (the job was
  // there already, or it waited).
  if (elastic()) round_ = world.round;
  DISTRUN_ENFORCE_EQ(world.round, round_);
  phase_ = Phase::kRunning;
  state_.firstRank = world.firstRank;
  if (elastic()) {  // this round's place of the node
    config_.layout.nodeRank = world.nodeRank;
    config_.layout.numNodes = world.numNodes;
  }
  rdzv::World started = world;
  started.restarts = restarts_.restarts();
  Actions out;
  if (!excluded.empty()) {
    out.push_back(Print{
        fmt::format("distrun: node {}: round {} leaves out node(s) {}: their workers failed in two "
                    "consecutive rounds (they may join a later round)\n",
                    config_.layout.nodeRank, world.round, distrun::join(excluded, ", "))});
  }
  out.push_back(StartWorkers{started});
  return out;
}

Actions Supervisor::workerStarted(int localRank, int pid, TimePoint) {
  DISTRUN_ENFORCE(inRound(), "a worker started outside a round");
  DISTRUN_ENFORCE_LT(state_.started, config_.layout.localWorldSize);
  ++state_.started;
  state_.running.insert(localRank);
  state_.pids[localRank] = pid;
  return {};
}

Actions Supervisor::workerExited(const WorkerFailure& exit, TimePoint now) {
  DISTRUN_ENFORCE(inRound(), "a worker exited outside a round");
  DISTRUN_ENFORCE_EQ(state_.running.erase(exit.localRank), 1u, "local rank ", exit.localRank);
  Actions out;
  if (exit.exitCode == 0 && exit.signal == 0) {
    out = workerSucceeded();
  } else if (exit.exitCode == toInt(ExitCode::kCheckpointed) && exit.signal == 0) {
    out = workerCheckpointed(exit.rank);
  } else if (phase_ == Phase::kRunning && isEcho(exit)) {
    out = echoExited(exit, now);
  } else if (phase_ == Phase::kRunning) {
    // Fail fast here; the published event stops the other nodes and, in
    // the store's order, decides the root cause.
    out = stopWorkers(now);
    append(out, publishFailure(exit));
  } else if (killedFromOutside(exit) && awaitingCause()) {
    out = publishFailure(exit);  // the cause the echo waited for, reaped late
  } else if (correctsTheCause(exit)) {
    out = publishFailure(exit);  // it raised before the cause every node stops for failed
  }                              // else: stopped on purpose, or the job failed already
  append(out, doneIfAwaiting(now));
  return endRoundIfOver(std::move(out));
}

Actions Supervisor::workerSucceeded() {
  if (phase_ != Phase::kRunning || !allExited()) return {};
  return markDone();
}

// A checkpointed worker is done like one that succeeded; the first one here
// is published so that every agent ends the job with 79.
Actions Supervisor::workerCheckpointed(int rank) {
  if (phase_ != Phase::kRunning) return {};  // stopped on purpose, or the job failed already
  Actions out;
  if (!state_.checkpointPublished) {
    state_.checkpointPublished = true;
    out.push_back(PublishEvent{JobEvent{Kind::kCheckpoint, std::to_string(rank)}});
  }
  if (!state_.checkpointedRank) state_.checkpointedRank = rank;
  append(out, workerSucceeded());
  return out;
}

Actions Supervisor::signalReceived(int signal, TimePoint now) {
  if (signal == SIGCHLD) return {};  // the agent reaps after every event
  if (phase_ == Phase::kJoining) {
    if (!isTerminal(signal)) return {};
    phase_ = Phase::kEnded;
    return {Print{fmt::format("distrun: node {}: interrupted by {} during the rendezvous: no "
                              "worker was started\n",
                              config_.layout.nodeRank, signalName(signal))},
            InterruptRendezvous{}, Exit{128 + signal}};
  }
  if (!inRound()) return {};
  if (isTerminal(signal) && isTheSameDelivery(signal, now)) return {};
  Actions out;
  if (isTerminal(signal) && state_.signal != 0) {  // a second one: no grace
    out = killRunning(fmt::format("a second signal ({})", signalName(signal)));
  } else if (isTerminal(signal)) {
    out = takeSignal(signal, now);
    state_.signalReceivedAt = now;
  }
  // Every node forwards it when it comes back from the store.
  out.push_back(PublishEvent{JobEvent{Kind::kSignal, std::to_string(signal)}});
  return endRoundIfOver(std::move(out));
}

Actions Supervisor::deadlinePassed(TimePoint now) {
  if (state_.causeWaitUntil && now >= *state_.causeWaitUntil) return causeWaitPassed(now);
  if (state_.correctionUntil && now >= *state_.correctionUntil) return correctionWaitPassed(now);
  if (!inRound() || !state_.killAt || now < *state_.killAt) return {};
  state_.killAt.reset();
  return killRunning(fmt::format("still running {} s after {} (--term-timeout)",
                                 seconds(config_.termTimeout), signalName(state_.stopSignal)));
}

// SIGKILL for the workers still running, after a line naming them.
Actions Supervisor::killRunning(const std::string& why) {
  state_.killSent = true;
  if (state_.running.empty()) return {KillWorkers{}};
  return {Print{fmt::format("distrun: node {}: killing {} with SIGKILL: {}\n",
                            config_.layout.nodeRank, runningWorkers(), why)},
          KillWorkers{}};
}

// "rank 1 (pid 4711), rank 2 (pid 4712)"
std::string Supervisor::runningWorkers() const {
  std::vector<std::string> workers;
  for (int local : state_.running) {
    workers.push_back(fmt::format("rank {} (pid {})", state_.firstRank + local,
                                  state_.pids.count(local) ? state_.pids.at(local) : 0));
  }
  return distrun::join(workers, ", ");
}

Actions Supervisor::storeLost(const std::string& why, TimePoint now) {
  if (!inRound()) return {};
  if (state_.complete || state_.cause.cause() || state_.signal != 0) return {};  // the end is known
  if (state_.lost.empty()) state_.lost = why;
  return endRoundIfOver(stopWorkers(now));
}

Actions Supervisor::nodesDone(long long count, TimePoint) {
  if (!inRound() || count != config_.layout.numNodes) return {};
  return {PublishEvent{JobEvent{Kind::kComplete, ""}}};
}

Actions Supervisor::storeEvent(const JobEvent& event, TimePoint now) {
  switch (event.kind) {
    case Kind::kFailure:
      return failurePublished(WorkerFailure::fromJson(event.payload), now);
    case Kind::kSignal:
      return signalPublished(std::stoi(event.payload), now);
    case Kind::kComplete:
      return jobCompleted(now);
    case Kind::kCheckpoint:
      return checkpointPublished(std::stoi(event.payload), now);
    case Kind::kStoreLost:
      return storeLost(event.payload, now);
    case Kind::kHang:
      return hangPublished(HangAnswer::fromJson(event.payload), now);
    case Kind::kNodeLost:
    case Kind::kNodeDied:  // the same loss; fencing (the agent) tells them apart
      return nodeLostPublished(event.payload, now);
    case Kind::kNodeWaiting:
      return nodeWaitingPublished(event.payload, now);
  }
  return {};
}

Actions Supervisor::failurePublished(const WorkerFailure& failure, TimePoint now) {
  if (!inRound()) return {};  // an event of a round already over
  if (isEcho(failure)) return echoPublished(failure, now);
  Actions out;
  if (state_.cause.takeCause(failure) == RootCause::Taken::kFirst) out = awaitCorrection(now);
  append(out, stopWorkers(now));
  return endRoundIfOver(std::move(out));
}

Actions Supervisor::signalPublished(int signal, TimePoint now) {
  if (!inRound()) return {};
  if (signal == SIGUSR1) state_.usr1 = true;
  if (!isTerminal(signal)) return {SignalWorkers{signal}};
  return endRoundIfOver(takeSignal(signal, now));
}

Actions Supervisor::checkpointPublished(int rank, TimePoint) {
  if (!inRound()) return {};
  if (!state_.checkpointedRank) state_.checkpointedRank = rank;
  return {};
}

Actions Supervisor::jobCompleted(TimePoint now) {
  if (!inRound()) return {};
  state_.complete = true;
  return endRoundIfOver(settleOnEcho(now));
}

bool Supervisor::inRound() const { return phase_ == Phase::kRunning || phase_ == Phase::kStopping; }

bool Supervisor::allExited() const {
  return state_.started == config_.layout.localWorldSize && state_.running.empty();
}

Actions Supervisor::join(int round) {
  phase_ = Phase::kJoining;
  round_ = round;
  state_ = RoundState{};
  return {JoinRendezvous{round}};
}

Actions Supervisor::stopWorkers(TimePoint now) {
  if (phase_ != Phase::kRunning) return {};
  phase_ = Phase::kStopping;
  state_.killAt = now + config_.termTimeout;
  state_.stopSignal = SIGTERM;
  return {SignalWorkers{SIGTERM}, WakeAt{*state_.killAt}};
}

// The first terminal signal, from this agent or a peer: one line says so,
// then the workers get it.
// One Ctrl-C reaches the agent twice when it is sent to the process and to
// its group (GNU timeout, a shell's kill of both): the same signal within
// kSameSignalDelivery of the first is that one, not a second asking to kill.
bool Supervisor::isTheSameDelivery(int signal, TimePoint now) const {
  return state_.signalReceivedAt && signal == state_.signal &&
         now - *state_.signalReceivedAt < kSameSignalDelivery;
}

Actions Supervisor::takeSignal(int signal, TimePoint now) {
  if (state_.signal != 0) return {};
  state_.signal = signal;
  phase_ = Phase::kStopping;
  state_.killAt = now + config_.termTimeout;
  state_.stopSignal = signal;
  return {Print{interruptLine(signal)}, SignalWorkers{signal}, WakeAt{*state_.killAt}};
}

std::string Supervisor::interruptLine(int signal) const {
  if (state_.running.empty()) {
    return fmt::format("distrun: node {}: job interrupted by {}\n", config_.layout.nodeRank,
                       signalName(signal));
  }
  return fmt::format(
      "distrun: node {}: job interrupted by {}: stopping the workers (SIGKILL "
      "after {} s)\n",
      config_.layout.nodeRank, signalName(signal), seconds(config_.termTimeout));
}

Actions Supervisor::endRoundIfOver(Actions actions) {
  if (!inRound() || !allExited() || !endKnown()) return actions;
  if (correctable()) {
    append(actions, markDone());  // the last node done publishes "complete"
  } else {
    append(actions, endRound());
  }
  return actions;
}

Actions Supervisor::endRound() {
  const RoundState& s = state_;
  Actions out{EndRound{}};
  RoundEnd end(s.cause);
  end.signal = s.signal;
  end.complete = s.complete;
  end.storeLost = !s.lost.empty();
  end.waitingNode = s.waitingNode;
  append(out, nextRound(restarts_.after(end)));
  return out;
}

// A restart (fixed nodes), a re-formed job (elastic; first a store, then
// the rendezvous there), or the job's end.
Actions Supervisor::nextRound(const NextRound& next) {
  using Kind = NextRound::Kind;
  if (next.kind == Kind::kEndJob) return endJob();
  Actions out{Print{fmt::format(
      "distrun: node {}: {}; {} (restart {} of {})\n", config_.layout.nodeRank, next.why,
      next.kind == Kind::kRestart ? "restarting all workers" : "re-forming the job",
      restarts_.restarts(), config_.maxRestarts)}};
  if (next.storeFirst) {
    phase_ = Phase::kFindingStore;
    out.push_back(FindStore{});
    return out;
  }
  append(out, join(round_ + 1));
  return out;
}

// The job's end, in order of precedence: a failure or a lost node, a
// signal, success, the lost store.
Actions Supervisor::endJob() {
  phase_ = Phase::kEnded;
  if (state_.cause.cause()) return endWithFailure(*state_.cause.cause());
  if (state_.cause.lostNode()) return endWithLostNode();
  if (state_.signal != 0) return {LeaveJob{}, Exit{128 + state_.signal}};
  if (state_.complete && state_.checkpointedRank) return endCheckpointed();
  if (state_.complete) return {LeaveJob{}, Exit{0}};
  // The cause names the store already when the connection's end was seen
  // ("lost the rendezvous store at HOST:PORT: Connection timed out").
  const std::string store =
      fmt::format("the rendezvous store at {}:{}", config_.storeHost, storePort_);
  if (state_.lost.find(store) != std::string::npos) {
    return {EndWithError{fmt::format("node {} {} (did node 0's agent or its host die?)",
                                     config_.layout.nodeRank, state_.lost)}};
  }
  return {EndWithError{fmt::format("node {} lost {} (did node 0's agent or its host die?): {}",
                                   config_.layout.nodeRank, store, state_.lost)}};
}

// The report goes to stderr before anything can fail; the file is written
// after the exit barrier, so a write error (IoError, exit 74) cannot keep
// node 0's store from the other agents.
Actions Supervisor::endWithFailure(const WorkerFailure& failure) {
  Actions out{Print{failureText(failure)}, LeaveJob{}};
  if (!config_.logDir.empty()) {
    out.push_back(WriteFailureReport{
        fmt::format("{}/{}/failure.json", config_.logDir, config_.runId), failure.toJson() + "\n"});
  }
  out.push_back(Exit{failure.agentExitCode()});
  return out;
}

Actions Supervisor::endCheckpointed() {
  int code = toInt(ExitCode::kCheckpointed);
  std::string cause = state_.usr1 ? " on SIGUSR1" : "";
  std::string how = state_.usr1 ? "" : ", without a SIGUSR1 from distrun";
  return {
      Print{fmt::format("distrun: node {}: job checkpointed{}: the workers exited {} (rank {} "
                        "first{}); exit {} asks the batch script to requeue it\n",
                        config_.layout.nodeRank, cause, code, *state_.checkpointedRank, how, code)},
      LeaveJob{}, Exit{code}};
}

// Node 0 prints the whole report; the other agents one line naming it.
std::string Supervisor::failureText(const WorkerFailure& f) const {
  if (config_.layout.nodeRank != 0) {
    return fmt::format("distrun: node {}: stopped: rank {} on node {} failed\n",
                       config_.layout.nodeRank, f.rank, f.nodeRank);
  }
  std::ostringstream report;
  std::string logFolder =
      config_.logDir.empty() ? "" : workerLogFolder(config_, round_, f.localRank);
  printFailureReport(f, config_.runId, restarts_.restarts(), config_.maxRestarts, logFolder,
                     report);
  return report.str() + state_.cause.echoNote(f) + lostNodesNote();
}

}  // namespace distrun::launch
