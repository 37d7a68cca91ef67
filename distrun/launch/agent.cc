#include "distrun/launch/agent.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "distrun/common/atomic_file.h"
#include "distrun/common/enforce.h"
#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/common/unique_fd.h"
#include "distrun/launch/elastic_join.h"
#include "distrun/launch/job_events.h"
#include "distrun/launch/poll_sources.h"
#include "distrun/launch/status_line.h"
#include "distrun/launch/supervisor.h"
#include "distrun/launch/worker_group.h"
#include "distrun/launch/worker_output.h"
#include "distrun/launch/worker_setup.h"
#include "distrun/rdzv/elastic_rendezvous.h"
#include "distrun/rdzv/rendezvous.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/store_server.h"
#include "distrun/rdzv/store_succession.h"
#include "distrun/trace/agent_trace.h"

namespace distrun::launch {

namespace {

// How long node 0 keeps the store up for the other agents to read the end.
constexpr auto kExitBarrier = std::chrono::seconds(10);
// How often the workers' progress is sampled with --hang-timeout.
constexpr auto kSampleInterval = std::chrono::seconds(1);
// How often the agent looks for exiting workers to hurry (hurryExit,
// worker.h) while a round runs: a SIGKILLed worker's main thread leaves at
// once, but nothing wakes the agent until the last one has.
constexpr auto kExitingCheckInterval = std::chrono::milliseconds(250);

// A rendezvous round joined on another thread, so that the loop keeps
// reading the agent's signals meanwhile. The thread wakes the loop through
// fd() when it is done. Destroying it waits for the thread.
class Join {
 public:
  Join(rdzv::StoreClient& store, int round, const AgentConfig& config, int standbyPort,
       rdzv::TrainedRound trained) {
    world_ = std::async(std::launch::async, [this, &store, round, config, standbyPort, trained] {
      struct Notify {
        EventFd& fd;
        ~Notify() { fd.notify(); }
      } notify{done_};
      return joinRoundOf(store, round, config, standbyPort, pickFreeTcpPort, trained);
    });
  }
  int fd() const { return done_.fd(); }
  bool ready() const {
    return world_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }
  // The world agreed on; rethrows what the join threw.
  JoinedRound take() { return world_.get(); }

 private:
  EventFd done_;
  std::future<JoinedRound> world_;
};

// One round's mechanics: the watcher of its event sequence and this node's
// workers. Destroying it kills the workers still running, then stops the
// watcher.
struct RoundIo {
  RoundIo(const AgentConfig& config, int round, ProcessLauncher& launcher)
      : number(round),
        stdoutCopy(filteredCopy(config, round, config.stdoutFilters, "filtered_stdout.log")),
        stderrCopy(filteredCopy(config, round, config.stderrFilters, "filtered_stderr.log")),
        group(launcher, config.layout.nodeRank, nodeWithAddress(config)) {}
  static std::unique_ptr<FilteredCopy> filteredCopy(const AgentConfig& config, int round,
                                                    const std::vector<std::string>& needles,
                                                    const char* name) {
    if (needles.empty() || config.logDir.empty()) return nullptr;
    return std::make_unique<FilteredCopy>(
        needles, fmt::format("{}/{}", attemptFolder(config.logDir, config, round), name));
  }
  // Once the workers have started: its thread's connection and hello would
  // take a core from them (2 cores here, bench/launch.sh). It reads the
  // round's events from the first, so none published before is missed.
  void watchEvents(const AgentConfig& config) {
    watcher = std::make_unique<EventWatcher>(config.storeHost, config.storePort, config.token,
                                             config.runId, number, events.fd());
  }
  int number;
  EventFd events;
  std::unique_ptr<EventWatcher> watcher;
  // Before the group: the workers' outputs that write to them go first.
  std::unique_ptr<FilteredCopy> stdoutCopy;
  std::unique_ptr<FilteredCopy> stderrCopy;
  WorkerGroup group;
};

// Whether this agent may host the store at the start: node 0's; in an
// elastic job any agent on the endpoint's host (the first to bind its port
// does, torchrun's rule; the others there find the port taken), in a Slurm
// step its node 0 when the endpoint is its own host (a later step's node 0
// elsewhere would bind a store nobody reaches).
bool mayHostStore(const AgentConfig& config) {
  if (!config.elastic) return config.layout.nodeRank == 0;
  const bool endpointHere =
      config.storeHost == config.host || rdzv::isThisMachine(config.storeHost);
  const std::optional<int>& slurmRank = config.elastic->preferredNodeRank;
  if (slurmRank) return *slurmRank == 0 && endpointHere;
  return rdzv::isThisMachine(config.storeHost);
}

// Whether something listens at the store's port on this host within a
// second: another agent's store, bound and listening an instant after it
// took the port. A port taken by a socket that does not listen (another
// process's outgoing connection, a bound socket) refuses at once.
bool somethingListensAt(const std::string& host, int port) {
  try {
    const UniqueFd store(
        rdzv::connectTcp(host, port, rdzv::Clock::now() + std::chrono::seconds(1)));
    return true;
  } catch (const TimeoutError&) {
    return false;  // connectTcp's retries found nothing listening within the second
  }
}

std::unique_ptr<rdzv::StoreServer> startStoreServer(const AgentConfig& config) {
  if (!mayHostStore(config)) return nullptr;
  const bool elastic = config.elastic.has_value();
  raiseOpenFileLimit();
  // Only the address the other agents are told to reach (docs/security.md).
  std::string bind =
      config.layout.numNodes == 1 ? "127.0.0.1" : rdzv::storeBindAddress(config.storeHost, true);
  try {
    return std::make_unique<rdzv::StoreServer>(bind, config.storePort, config.token);
  } catch (const SystemError& e) {
    if (e.errorNumber() != EADDRINUSE) throw;
    // Another agent of this host came first, or a process that is no store
    // holds the port, where every agent would then wait its --join-timeout
    // out on "Connection refused".
    if (elastic && somethingListensAt(config.storeHost, config.storePort)) return nullptr;
    if (elastic) {
      throw ConfigError(fmt::format(
          "the rendezvous store's port {} is taken on this node, but nothing listens there "
          "({}): another process holds it (an outgoing connection or a socket that does not "
          "listen); choose a free port with --rdzv-endpoint HOST:PORT",
          config.storePort, e.what()));
    }
    throw ConfigError(fmt::format(
        "the rendezvous store's port {} is already in use on this node ({}): choose a free "
        "port with --rdzv-endpoint HOST:PORT (or --master-port)",
        config.storePort, e.what()));
  }
}

// The store's job events the trace shows (docs/observability.md).
void traceJobEvent(trace::AgentTrace& trace, const JobEvent& e) {
  switch (e.kind) {
    case JobEvent::Kind::kHang:
      return trace.jobEvent("hang", {});
    case JobEvent::Kind::kNodeLost:
    case JobEvent::Kind::kNodeDied:
      return trace.jobEvent("node_lost", trace::Args().add("node", e.payload));
    case JobEvent::Kind::kFailure:
      return trace.jobEvent("job_failure", {});
    case JobEvent::Kind::kCheckpoint:
      return trace.jobEvent("checkpoint", trace::Args().add("rank", e.payload));
    default:
      return;
  }
}

// An elastic agent's reserved store address, for store succession.
std::optional<rdzv::StandbyStore> standbyOf(const AgentConfig& config) {
  if (!config.elastic) return std::nullopt;
  return std::make_optional<rdzv::StandbyStore>(rdzv::storeBindAddress(config.host, true));
}

// `config` with the store where it is now (after a succession, not where
// it was at the start).
AgentConfig withStore(AgentConfig config, const rdzv::StoreCandidate& store) {
  config.storeHost = store.host;
  config.storePort = store.port;
  return config;
}

}  // namespace

// The agent's mechanics: what it polls, and one operator() per Supervisor
// action saying how it is carried out. No decision is taken here.
class Agent::Loop {
 public:
  explicit Loop(Agent& agent)
      : agent_(agent),
        config_(agent.config_),
        trace_(agent.env_, config_.layout.nodeRank, agent.err_),
        server_(startStoreServer(config_)),
        storeAt_{config_.storeHost, server_ ? server_->port() : config_.storePort},
        standby_(standbyOf(config_)),
        supervisor_(config_, storeAt_.port),
        status_(config_.status, agent.err_, agent.clock_, config_.statusFile,
                [&env = agent.env_] { return terminalColumns(STDERR_FILENO, env); }) {}

  int run() {
    feed(supervisor_.start(now()));
    while (!exitCode_) waitForEvents();
    return *exitCode_;
  }

  void operator()(const JoinRendezvous& a) {
    trace_.rendezvousStarted(a.round);
    if (isAloneInJob(config_)) return joinAlone(a.round);
    join_ = std::make_unique<Join>(store(), a.round, config_, standby_ ? standby_->port() : 0,
                                   trained_);
  }
  void operator()(const InterruptRendezvous&) {
    if (!join_) return;
    store().interrupt();
    try {
      join_->take();
    } catch (const Error&) {
      // Interrupted on purpose.
    }
    join_.reset();
  }
  // The workers get this round's node rank and count (an elastic job's
  // change from round to round: Supervisor::config()).
  void operator()(const StartWorkers& a) {
    const AgentConfig config = withStore(supervisor_.config(), storeAt_);
    round_ = std::make_unique<RoundIo>(config, a.world.round, agent_.launcher_);
    if (a.world.restarts > 0) trace_.restarted(a.world.restarts, a.world.round);
    for (int local = 0; local < config.layout.localWorldSize; ++local) {
      int rank = workerRank(a.world, local);
      std::unique_ptr<WorkerOutput> output = workerOutput(config, a.world.round, rank, local);
      output->setStatusLine(&status_.line());
      output->setFilteredCopies(round_->stdoutCopy.get(), round_->stderrCopy.get());
      int pid = round_->group.add(rank, local,
                                  workerSpec(config, a.world, storeAt_.port, local, agent_.env_),
                                  std::move(output));
      trace_.workerStarted(rank, local, pid, a.world.restarts);
      feed(supervisor_.workerStarted(local, pid, now()));
    }
    if (round_) round_->watchEvents(config);
    if (config_.hangTimeout.count() > 0) nextSample_ = now() + kSampleInterval;
  }
  // A stopped worker (SIGSTOP) gets a signal that ends the job only once
  // it runs again: SIGCONT follows, so that it is not left to SIGKILL.
  void operator()(const SignalWorkers& a) {
    round().group.signalAll(a.signal);
    trace_.signalForwarded(a.signal);
    if (a.signal != SIGUSR1 && a.signal != SIGUSR2) round().group.signalAll(SIGCONT);
  }
  void operator()(const KillWorkers&) {
    round().group.signalAll(SIGKILL);
    trace_.workersKilled();
  }
  void operator()(const WakeAt& a) { wakeAt_ = a.time; }
  void operator()(const PublishEvent& a) {
    try {
      publishEvent(store(), round().number, a.event);
    } catch (const Error& e) {
      feed(supervisor_.storeLost(e.what(), now()));
    }
  }
  void operator()(const MarkNodeDone&) {
    try {
      long long done = store().add(rdzv::roundKey(round().number, "done"), 1);
      feed(supervisor_.nodesDone(done, now()));
    } catch (const Error& e) {
      feed(supervisor_.storeLost(e.what(), now()));
    }
  }
  void operator()(const Print& a) {
    status_.line().clear();
    agent_.err_ << a.text;
  }
  void operator()(const EndRound&) {
    status_.finish();
    round_.reset();
    wakeAt_.reset();
    nextSample_.reset();
    killAdoptedOrphans();
  }
  void operator()(const LeaveJob&);
  void operator()(const WriteFailureReport& a);
  void operator()(const RecordNodeFailure&) {
    try {
      rdzv::recordNodeFailure(store(), round().number, config_.elastic->nodeName);
    } catch (const Error& e) {
      feed(supervisor_.storeLost(e.what(), now()));
    }
  }
  void operator()(const FindStore&);
  void operator()(const Exit& a) {
    status_.finish();
    exitCode_ = a.code;
  }
  void operator()(const EndWithError& a) { throw RendezvousError(a.message); }

 private:
  TimePoint now() const { return agent_.clock_.now(); }

  // A node of the last round trained whose process is gone for sure: a
  // round's fencing counts it out (rdzv::detail::fencedBy).
  void noteGone(const std::string& name) {
    if (name.empty()) return;
    std::vector<std::string>& gone = trained_.gone;
    if (std::find(gone.begin(), gone.end(), name) == gone.end()) gone.push_back(name);
  }

  // The agent's connection to the store, made at its first use: a job of
  // one node makes none before its workers start (joinAlone).
  rdzv::StoreClient& store() {
    if (!store_) {
      store_ = std::make_unique<rdzv::StoreClient>(storeAt_.host, storeAt_.port, config_.token,
                                                   config_.joinTimeout, config_.runId);
    }
    return *store_;
  }

  // A fixed job of one node has no other agent to meet: its world is its
  // own workers, known without the store's round trips and the join's
  // thread (they took 0.6 to 1.1 ms of a 7 ms start, bench/launch.sh). Nobody
  // watches for its loss either, so it leaves no will.
  void joinAlone(int round) {
    rdzv::World w =
        rdzv::soloWorld(round, config_.layout.localWorldSize, config_.host, pickFreeTcpPort());
    trace_.rendezvousDone(w.round, w.worldSize, w.numNodes, w.nodeRank);
    feed(supervisor_.rendezvousCompleted(w, now(), {}));
  }

  RoundIo& round() {
    DISTRUN_ENFORCE(round_ != nullptr, "a round's action outside a round");
    return *round_;
  }

  // Carries out `actions` in order; the actions that the events they cause
  // bring (a failed publish, the done count) follow them.
  void feed(Actions actions) {
    for (Action& a : actions) pending_.push_back(std::move(a));
    if (feeding_) return;
    feeding_ = true;
    while (!pending_.empty()) {
      Action a = std::move(pending_.front());
      pending_.pop_front();
      std::visit(*this, a);
    }
    feeding_ = false;
  }

  void waitForEvents() {
    std::vector<pollfd> fds = {{signals_.fd(), POLLIN, 0}};
    if (join_) fds.push_back({join_->fd(), POLLIN, 0});
    if (round_) {
      fds.push_back({round_->events.fd(), POLLIN, 0});
      round_->group.addPollFds(fds);
    }
    if (::poll(fds.data(), fds.size(), pollTimeout()) < 0 && errno != EINTR) {
      throw SystemError("poll", "agent loop", errno);
    }
    if (round_) round_->group.pumpOutput(fds);
    takeSignals();
    takeRendezvous();
    takeStoreEvents();
    reapWorkers();
    hurryExitingWorkers();
    takeDeadline();
    sampleProgress();
    status_.update(round_ ? round_->group.statuses() : std::vector<RankStatus>{});
  }

  void takeSignals() {
    for (int s : signals_.read()) {
      trace_.signalReceived(s);
      feed(supervisor_.signalReceived(s, now()));
    }
  }
  // A failed join of an elastic job ends it through the Supervisor, which
  // names the nodes lost so far, or, the store lost, seeks its successor; a
  // fixed job's join error ends the agent.
  void takeRendezvous() {
    if (!join_ || !join_->ready()) return;
    std::optional<JoinedRound> joined;
    try {
      joined = join_->take();
    } catch (const rdzv::StoreLostError& e) {
      join_.reset();
      if (!config_.elastic) throw;
      feed(supervisor_.storeLostWhileJoining(e.what(), !successors_.empty(), now()));
      return;
    } catch (const RendezvousError& e) {
      join_.reset();
      if (!config_.elastic) throw;
      feed(supervisor_.rendezvousFailed(e.what(), now()));
      return;
    }
    join_.reset();
    if (!joined->successors.empty()) successors_ = joined->successors;
    const rdzv::World& w = joined->world;
    trained_ = rdzv::TrainedRound{w.round, w.numNodes, w.nodeRank == 0, {}};
    trace_.rendezvousDone(w.round, w.worldSize, w.numNodes, w.nodeRank);
    feed(supervisor_.rendezvousCompleted(joined->world, now(), joined->excluded));
  }
  void takeStoreEvents() {
    if (!round_) return;
    round_->events.drain();
    if (!round_->watcher) return;
    for (const JobEvent& e : round_->watcher->take()) {
      if (e.kind == JobEvent::Kind::kNodeDied) noteGone(e.payload);
      traceJobEvent(trace_, e);
      feed(supervisor_.storeEvent(e, now()));
    }
  }
  void reapWorkers() {
    if (!round_) return;
    for (const WorkerFailure& exit : round_->group.reap()) {
      trace_.workerExited(exit.rank, exit.localRank, exit.pid, exit.exitCode, exit.signal);
      feed(supervisor_.workerExited(exit, now()));
    }
  }
  void hurryExitingWorkers() {
    const TimePoint t = now();
    if (!round_ || t < nextExitingCheck_) return;
    nextExitingCheck_ = t + kExitingCheckInterval;
    round_->group.hurryExiting();
  }
  void takeDeadline() {
    TimePoint t = now();
    if (!wakeAt_ || t < *wakeAt_) return;
    wakeAt_.reset();
    feed(supervisor_.deadlinePassed(t));
  }
  void sampleProgress() {
    TimePoint t = now();
    if (!round_ || !nextSample_ || t < *nextSample_) return;
    nextSample_ = t + kSampleInterval;
    feed(supervisor_.progressSampled(round_->group.progress(agent_.probe_), t));
  }
  int pollTimeout() const {
    std::optional<TimePoint> next = wakeAt_;
    std::optional<TimePoint> exitingCheck;
    if (round_) exitingCheck = nextExitingCheck_;
    for (const std::optional<TimePoint>& at : {nextSample_, status_.nextDue(), exitingCheck}) {
      if (at && (!next || *at < *next)) next = at;
    }
    if (!next) return -1;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*next - now());
    return static_cast<int>(std::max<long long>(left.count(), 0)) + 1;
  }

  Agent& agent_;
  const AgentConfig& config_;
  SignalReader signals_;     // first: blocks the signals before any thread starts
  trace::AgentTrace trace_;  // DISTRUN_TRACE: this agent's events
  std::unique_ptr<rdzv::StoreServer> server_;
  rdzv::StoreCandidate storeAt_;  // where the store is now (a succession moves it)
  std::unique_ptr<rdzv::StoreClient> store_;
  std::optional<rdzv::StandbyStore> standby_;     // elastic jobs: this agent's reserve
  std::vector<rdzv::StoreCandidate> successors_;  // elastic jobs: the last round's candidates
  rdzv::TrainedRound trained_;  // elastic jobs: the last round trained, for fencing
  Supervisor supervisor_;
  AgentStatus status_;  // before round_: its workers' output erases the status line
  std::unique_ptr<Join> join_;
  std::unique_ptr<RoundIo> round_;
  std::optional<TimePoint> wakeAt_;
  std::optional<TimePoint> nextSample_;  // with --hang-timeout, while workers run
  TimePoint nextExitingCheck_{};         // while a round runs (kExitingCheckInterval)
  std::optional<int> exitCode_;
  std::deque<Action> pending_;
  bool feeding_ = false;
};

// Walks the last round's candidates for the store's successor (or becomes
// it: store_succession.h), then connects there. An agent that is not among
// the candidates (the first nodes of the round) walks them with itself last.
// The walk runs on the loop's thread: a dead agent costs nothing, a dead
// host kCandidateConnectTimeout, and signals wait for it.
void Agent::Loop::operator()(const FindStore&) {
  const std::string lost = fmt::format("{}:{}", storeAt_.host, storeAt_.port);
  try {
    std::vector<rdzv::StoreCandidate> candidates = successors_;
    const rdzv::StoreCandidate self{config_.host, standby_->port()};
    auto it = std::find(candidates.begin(), candidates.end(), self);
    if (it == candidates.end()) it = candidates.insert(candidates.end(), self);
    const auto index = static_cast<size_t>(it - candidates.begin());
    rdzv::StoreLocation at =
        rdzv::findOrBecomeStore(candidates, index, *standby_, config_.token, storeAt_);
    if (at.server) server_ = std::move(at.server);
    for (const rdzv::StoreCandidate& c : at.gone) noteGone(c.name);
    storeAt_ = at.address;
    store_.reset();
    store();  // connects to the new store now, inside this try
  } catch (const Error& e) {
    feed(supervisor_.rendezvousFailed(
        fmt::format("the rendezvous store at {} was lost and no successor took over: {}", lost,
                    e.what()),
        now()));
    return;
  }
  feed(supervisor_.storeFound(fmt::format("{}:{}", storeAt_.host, storeAt_.port), now()));
}

// The failure report's folder is created here; an error in either step is
// an IoError naming the report.
void Agent::Loop::operator()(const WriteFailureReport& a) {
  std::filesystem::path folder = std::filesystem::path(a.path).parent_path();
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) {
    throw IoError(fmt::format("failure report {}: cannot create its folder {}: {}", a.path,
                              folder.string(), error.message()));
  }
  writeFileAtomically(a.path, a.json, "failure report");
}

Agent::Agent(AgentConfig config, const Environment& env, std::ostream& err, const Clock& clock,
             ProcessLauncher& launcher, const ProgressProbe& probe)
    : config_(std::move(config)),
      env_(env),
      err_(err),
      clock_(clock),
      launcher_(launcher),
      probe_(probe) {}

const Clock& Agent::steadyClock() {
  static const SteadyClock clock;
  return clock;
}

// The private run folder (privateRunFolder) for the workers' error files,
// and for their log files when -r/-t asked for files without --log-dir.
// Returns the folder to remove when the job ends (the error files' only),
// empty when none is. A folder that cannot be made costs the error files,
// never the job, unless log files need it (IoError naming the reason).
std::string Agent::placeRunFolder() {
  if (!config_.errorRoot.empty()) return "";  // --log-dir
  std::string folder;
  try {
    folder = privateRunFolder(env_);
  } catch (const Error& e) {
    if (config_.logDirIsPrivate) {  // the user asked for log files: they need a home
      throw IoError(fmt::format(
          "log files without --log-dir (-r, -t, --duplicate-*-filters) go to a private folder, "
          "and {}: give --log-dir a folder this user can write",
          e.what()));
    }
    err_ << "distrun: note: " << e.what() << ": the workers get no TORCHELASTIC_ERROR_FILE\n";
    return "";
  }
  config_.errorRoot = folder;
  if (!config_.logDirIsPrivate) return folder;
  config_.logDir = folder;
  err_ << "distrun: log files without --log-dir (-r, -t, --duplicate-*-filters) go to " << folder
       << "\n";
  return "";
}

int Agent::run() {
  becomeSubreaper();
  struct RemovedAtEnd {
    std::string path;
    ~RemovedAtEnd() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
  } removed{placeRunFolder()};
  return Loop(*this).run();
}

// Every agent says it is leaving (the round's lost nodes never will); the
// agent hosting the store keeps it up until all have read the end of the
// job (or kExitBarrier passes).
void Agent::Loop::operator()(const LeaveJob& a) {
  if (isAloneInJob(config_)) return;  // nobody to tell, nobody to wait for
  int round = supervisor_.round();
  try {
    store().clearWill();  // leaving is no loss
    long long exited = store().add(rdzv::roundKey(round, "exited"), 1);
    std::string allExited = rdzv::roundKey(round, "all_exited");
    if (exited == supervisor_.config().layout.numNodes - a.lostNodes) store().set(allExited, "1");
    if (server_) store().get(allExited, kExitBarrier);
  } catch (const Error&) {
    // The store is gone: nobody is left to wait for.
  }
}

}  // namespace distrun::launch
