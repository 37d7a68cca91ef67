#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "distrun/common/clock.h"
#include "distrun/launch/agent_config.h"
#include "distrun/launch/failure_report.h"
#include "distrun/launch/hang_watch.h"
#include "distrun/launch/job_events.h"
#include "distrun/launch/restart_policy.h"
#include "distrun/launch/root_cause.h"
#include "distrun/rdzv/rendezvous.h"

namespace distrun::launch {

// What the Supervisor asks its agent to do, in the order given.

// Join rendezvous round `round`; answer with rendezvousCompleted.
struct JoinRendezvous {
  int round;
};
// Abandon the join under way.
struct InterruptRendezvous {};
// Start this node's workers in `world` (world.restarts set by the
// Supervisor). Answer with workerStarted (local rank and pid) for each.
struct StartWorkers {
  rdzv::World world;
};
// Send `signal` to every running worker's process group.
struct SignalWorkers {
  int signal;
};
// SIGKILL every running worker's process group.
struct KillWorkers {};
// Call deadlinePassed once the clock reads `time` (replaces an earlier one).
struct WakeAt {
  TimePoint time;
};
// Append `event` to the round's event sequence in the store; a store error
// is answered with storeLost.
struct PublishEvent {
  JobEvent event;
};
// Count this node done in the store; answer with nodesDone (or storeLost).
struct MarkNodeDone {};
// Write `text` to the agent's stderr as it is (its lines end in '\n').
struct Print {
  std::string text;
};
// The round's workers are gone: drop them and kill the orphans they left.
struct EndRound {};
// The exit barrier: tell the other agents this one leaves (`lostNodes` of
// this round's nodes never will).
struct LeaveJob {
  int lostNodes = 0;
};
// Write the failure report atomically (IoError, exit 74, when it fails).
struct WriteFailureReport {
  std::string path;  // <log-dir>/<run-id>/failure.json
  std::string json;
};
// Elastic jobs: this node's worker failed in this round; record it in the
// store, where the rendezvous leaves out a node that failed twice in a row.
struct RecordNodeFailure {};
// Elastic jobs: the store was lost; find its successor (or become it) among
// the last round's candidates; answer with storeFound or rendezvousFailed.
struct FindStore {};
// Return `code` from Agent::run.
struct Exit {
  int code;
};
// End the agent with a RendezvousError (exit 76) saying `message`.
struct EndWithError {
  std::string message;
};

using Action =
    std::variant<JoinRendezvous, InterruptRendezvous, StartWorkers, SignalWorkers, KillWorkers,
                 WakeAt, PublishEvent, MarkNodeDone, Print, EndRound, LeaveJob, WriteFailureReport,
                 RecordNodeFailure, FindStore, Exit, EndWithError>;
using Actions = std::vector<Action>;

// Moves `more` onto the end of `to`.
void append(Actions& to, Actions more);

// One line naming an action ("signal 15", "exit 7"), for tests and logs.
std::string describe(const Action& action);

// How long an echo waits for a cause before the workers are stopped.
inline constexpr std::chrono::seconds kCauseWait{5};

// The same terminal signal again within this is one delivery reaching the
// agent twice (to it and to its process group), not a second signal.
inline constexpr std::chrono::milliseconds kSameSignalDelivery{100};

// The policy of one node's agent as a state machine: events in, actions
// out. It never reads a clock (each event carries the time), makes no
// system call and holds no store: the Agent feeds it and carries out what
// it returns. Not thread-safe; one agent thread drives it.
//
// The decisions (docs/launcher.md, "Supervision"):
// - fail fast: the first bad exit of a worker here stops this node's
//   workers (SIGTERM, SIGKILL after termTimeout) and is published; a
//   failure published by any agent stops the workers of every node;
// - the root cause (root causes over echoes): a worker's own error (a
//   cause) always outranks a failure that only lost its peer (an echo,
//   isEcho in failure_cause.h); among equals the first in the store's
//   event order wins, the same on every node. An echo does not stop the
//   workers: the job waits kCauseWait for a cause to be published, then
//   stops them, and settles on the first echo only once every node's
//   workers have exited (the "complete" event, or kCauseWait twice plus
//   termTimeout after this node's workers exited);
// - restarts: a failed round is followed by a new rendezvous and round
//   while round < maxRestarts; then the job ends with the root cause's
//   code (128+signal for a signal-killed worker);
// - terminal signals (TERM INT HUP QUIT) are forwarded to the workers and
//   published, SIGKILL follows after termTimeout, and a second one kills
//   at once; the agent exits 128+N. During a rendezvous the join is
//   abandoned and the agent exits 128+N at once. USR1/USR2 are published
//   and forwarded when they come back from the store; the job goes on;
// - preemption (docs/launcher.md, "Preemption"): a worker exiting 79
//   (ExitCode::kCheckpointed) wrote a snapshot and asks to be requeued,
//   after a forwarded USR1 or not. It is no failure and counts no restart:
//   it is published, so that every agent knows; once every node's workers
//   have exited (0 or 79) every agent exits 79 after one line;
// - what the user sees: one line when the job is interrupted (the signal,
//   and the grace before SIGKILL), and one line naming the workers (ranks
//   and pids) that SIGKILL ends, and why;
// - the store lost mid-round stops the workers and ends with a
//   RendezvousError, unless the job's end was already known;
// - hung workers (--hang-timeout; docs/launcher.md, "Hung workers"): a
//   worker without progress for the timeout makes its node publish a hang
//   answer, every node answers with its likeliest cause, and the one named
//   from all answers is published as the failure (exit 75);
// - a lost node (its agent's store connection closed without a goodbye;
//   the store publishes the agent's will): a cause like a worker's own
//   error, first in the store's order wins; without restarts left the job
//   ends with a RendezvousError naming the node;
// - elastic jobs (config.elastic; docs/launcher.md, "Elastic jobs"): a lost
//   node, a failure or a lost store re-form the job on the nodes left (a
//   new round, one restart of --max-restarts); a lost store is first
//   replaced (FindStore), also when it is lost while a later round forms.
//   A node waiting to join stops the workers and
//   re-forms the job with it, without counting a restart, while the round
//   has fewer than MAX nodes. A round that cannot gather MIN nodes ends
//   the job, naming the nodes lost so far.
class Supervisor {
 public:
  enum class Phase {
    kIdle,          // before start()
    kJoining,       // a rendezvous is under way
    kFindingStore,  // elastic: the store was lost; its successor is sought
    kRunning,       // workers run, nothing decided
    kStopping,      // the workers are being stopped (failure, signal, lost store)
    kEnded,         // Exit or EndWithError was returned
  };

  // `config` is copied; `storePort` is where node 0's store listens, for
  // the lost-store message.
  Supervisor(AgentConfig config, int storePort);

  Actions start(TimePoint now);
  // `excluded`: the nodes an elastic round left out for repeated failures.
  Actions rendezvousCompleted(const rdzv::World& world, TimePoint now,
                              const std::vector<std::string>& excluded = {});
  // The join failed (no MIN nodes in time, the store gone): the job ends
  // with `why` and the nodes lost so far.
  Actions rendezvousFailed(const std::string& why, TimePoint now);
  // Elastic: the store was lost while this node joined a round (`why`).
  // With `successorsKnown` (a round completed before, whose first nodes are
  // the candidates) the successor is sought (FindStore) and the next round
  // joined there, without counting a restart; without, the job ends as
  // rendezvousFailed.
  Actions storeLostWhileJoining(const std::string& why, bool successorsKnown, TimePoint now);
  // Elastic: the store's successor answers at `address` (FindStore).
  Actions storeFound(const std::string& address, TimePoint now);
  // `pid` is the worker's process (and process group), for the line that
  // names the workers SIGKILL ends.
  Actions workerStarted(int localRank, int pid, TimePoint now);
  // `exit` is the worker's record: exit code or signal, pid, host, time and
  // stderr tail; exitCode 0 and signal 0 for a clean exit.
  Actions workerExited(const WorkerFailure& exit, TimePoint now);
  Actions signalReceived(int signal, TimePoint now);
  Actions deadlinePassed(TimePoint now);
  Actions storeLost(const std::string& why, TimePoint now);
  Actions nodesDone(long long count, TimePoint now);
  // An event of the round's sequence (from any agent, this one included),
  // decoded into one of the calls below. Throws RendezvousError when a
  // failure record is malformed.
  Actions storeEvent(const JobEvent& event, TimePoint now);
  Actions failurePublished(const WorkerFailure& failure, TimePoint now);
  Actions signalPublished(int signal, TimePoint now);
  Actions checkpointPublished(int rank, TimePoint now);
  Actions jobCompleted(TimePoint now);
  // A sample of this node's running workers (about every second while they
  // run, with --hang-timeout), and a node's hang answer from the store.
  Actions progressSampled(const std::vector<WorkerProgress>& workers, TimePoint now);
  Actions hangPublished(const HangAnswer& answer, TimePoint now);
  // A node's agent is gone (`node`: its name), and, elastic, a node waits
  // to join.
  Actions nodeLostPublished(const std::string& node, TimePoint now);
  Actions nodeWaitingPublished(const std::string& node, TimePoint now);

  Phase phase() const { return phase_; }
  int round() const { return round_; }
  int restarts() const { return restarts_.restarts(); }
  // The configuration with this round's node rank and node count.
  const AgentConfig& config() const { return config_; }

 private:
  // What is known about the round under way.
  struct RoundState {
    int started = 0;
    int firstRank = 0;                          // this node's local rank 0 in the world
    std::set<int> running;                      // local ranks
    std::map<int, int> pids;                    // local rank -> pid
    int stopSignal = 0;                         // what the workers were sent to stop them
    RootCause cause;                            // the failures ranked (root_cause.h)
    int signal = 0;                             // the first terminal signal, from here or a peer
    std::optional<TimePoint> signalReceivedAt;  // when it reached this agent itself
    bool complete = false;
    bool usr1 = false;                    // SIGUSR1 was forwarded to the workers
    std::optional<int> checkpointedRank;  // the first rank that exited 79, anywhere
    bool checkpointPublished = false;
    bool doneMarked = false;
    std::string lost;  // why the store was lost
    std::optional<TimePoint> killAt;
    bool killSent = false;  // this agent SIGKILLed the workers still running
    HangWatch hang;         // --hang-timeout
    // While an echo waits for its cause (supervisor_cause.cc).
    std::optional<TimePoint> causeWaitUntil;  // stop the workers, or settle, then
    bool settleArmed = false;                 // this node's workers exited while waiting
    // A cause without an exception of its own, which an earlier one raised
    // on another node may still correct: end once every node is done, or then.
    std::optional<TimePoint> correctionUntil;
    bool correctionClosed = false;
    // Lost nodes and joining ones.
    std::optional<std::string> waitingNode;  // elastic: the first node waiting to join
    int lostInRound = 0;                     // nodes lost in this round
  };

  bool inRound() const;
  bool allExited() const;
  Actions join(int round);
  Actions stopWorkers(TimePoint now);
  Actions takeSignal(int signal, TimePoint now);
  bool isTheSameDelivery(int signal, TimePoint now) const;
  Actions killRunning(const std::string& why);
  std::string runningWorkers() const;
  std::string interruptLine(int signal) const;
  Actions workerSucceeded();
  Actions workerCheckpointed(int rank);
  Actions endRoundIfOver(Actions actions);
  Actions endRound();
  Actions nextRound(const NextRound& next);
  Actions endJob();
  Actions endWithFailure(const WorkerFailure& failure);
  Actions endCheckpointed();
  std::string failureText(const WorkerFailure& failure) const;
  Actions publishHangAnswer();
  Actions hangVerdict(TimePoint now);
  // Root causes over echoes.
  Actions publishFailure(WorkerFailure failure);
  bool awaitingCause() const;
  Actions echoExited(const WorkerFailure& echo, TimePoint now);
  bool killedFromOutside(const WorkerFailure& exit) const;
  Actions echoPublished(const WorkerFailure& echo, TimePoint now);
  Actions armCauseWait(TimePoint now);
  Actions doneIfAwaiting(TimePoint now);
  Actions causeWaitPassed(TimePoint now);
  Actions settleOnEcho(TimePoint now);
  bool correctable() const;
  Actions awaitCorrection(TimePoint now);
  bool correctsTheCause(const WorkerFailure& exit) const;
  Actions correctionWaitPassed(TimePoint now);
  Actions markDone();
  // Lost nodes and elastic re-forming (supervisor_elastic.cc).
  bool elastic() const { return config_.elastic.has_value(); }
  bool endKnown() const;
  Actions endWithLostNode();
  std::string lostNodesNote() const;

  AgentConfig config_;
  int storePort_;
  Phase phase_ = Phase::kIdle;
  int round_ = 0;
  RestartPolicy restarts_;              // what follows a round; counts the restarts
  std::vector<std::string> lostNodes_;  // every node lost so far, in order
  RoundState state_;
};

}  // namespace distrun::launch
