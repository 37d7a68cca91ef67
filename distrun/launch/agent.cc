#include "distrun/launch/agent.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <ostream>

#include <fmt/format.h>

#include "distrun/cluster/rank_env.h"
#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/launch/job_events.h"
#include "distrun/launch/worker_group.h"
#include "distrun/rdzv/rendezvous.h"
#include "distrun/rdzv/store_server.h"

extern char** environ;

namespace distrun::launch {

namespace {

using Clock = std::chrono::steady_clock;
using Kind = JobEvent::Kind;

constexpr int kHandledSignals[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP,
                                   SIGQUIT, SIGUSR1, SIGUSR2};
// How long node 0 keeps the store up for the other agents to read the end.
constexpr auto kExitBarrier = std::chrono::seconds(10);

bool isTerminal(int signal) {
  return signal != SIGUSR1 && signal != SIGUSR2 && signal != SIGCHLD;
}

// The agent's handled signals, blocked and read from a descriptor so the
// loop sees them as events. Blocked before any thread starts, so every
// thread inherits the mask; workers unblock them before exec.
class SignalReader {
 public:
  SignalReader() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : kHandledSignals) sigaddset(&set, s);
    if (::pthread_sigmask(SIG_BLOCK, &set, &previous_) != 0) {
      throw SystemError("pthread_sigmask", "SIG_BLOCK", errno);
    }
    fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd_ < 0) throw SystemError("signalfd", "agent signals", errno);
  }
  ~SignalReader() {
    ::close(fd_);
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  int fd() const { return fd_; }
  std::vector<int> read() {
    std::vector<int> out;
    signalfd_siginfo info;
    while (::read(fd_, &info, sizeof(info)) == sizeof(info)) {
      out.push_back(static_cast<int>(info.ssi_signo));
    }
    return out;
  }

 private:
  int fd_ = -1;
  sigset_t previous_;
};

class EventFd {
 public:
  EventFd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw SystemError("eventfd", "agent events", errno);
  }
  ~EventFd() { ::close(fd_); }
  int fd() const { return fd_; }
  void notify() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof(one));
  }
  void drain() {
    uint64_t n;
    [[maybe_unused]] ssize_t r = ::read(fd_, &n, sizeof(n));
  }

 private:
  int fd_;
};

std::map<std::string, std::string> processEnvironment() {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return vars;
}

// Joins a round on another thread while this one watches the agent's
// signals: a SIGTERM during a long rendezvous ends the agent at once rather
// than after the join timeout. Returns nullopt and sets *signal then.
std::optional<rdzv::World> joinOrSignal(rdzv::StoreClient& store, int round,
                                        const rdzv::RendezvousConfig& config,
                                        SignalReader& signals, int* signal) {
  EventFd done;
  auto world = std::async(std::launch::async, [&] {
    struct Notify {
      EventFd& fd;
      ~Notify() { fd.notify(); }
    } notify{done};
    return rdzv::joinRound(store, round, config);
  });
  while (true) {
    std::vector<pollfd> fds = {{signals.fd(), POLLIN, 0}, {done.fd(), POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      throw SystemError("poll", "rendezvous", errno);
    }
    if (fds[1].revents) return world.get();
    for (int s : signals.read()) {
      if (!isTerminal(s)) continue;
      store.interrupt();
      try {
        world.get();
      } catch (const Error&) {
        // Interrupted on purpose.
      }
      *signal = s;
      return std::nullopt;
    }
  }
}

enum class Outcome { kSucceeded, kFailed, kSignalled, kStoreLost };

struct AttemptResult {
  Outcome outcome;
  WorkerFailure failure;
  int signal = 0;
  std::string why;
};

}  // namespace

// One attempt: this node's workers for one round, supervised until the
// whole job has succeeded, failed, been signalled or lost its store.
struct Agent::Round {
  Round(const AgentConfig& cfg, const Environment& environment,
        rdzv::StoreClient& client, int port, const rdzv::World& w,
        SignalReader& signalReader)
      : config(cfg), env(environment), store(client), storePort(port),
        world(w), signals(signalReader),
        watcher(cfg.storeHost, port, cfg.token, w.round, events.fd()) {}

  AttemptResult run() {
    startWorkers();
    while (!finished()) {
      std::vector<pollfd> fds = {{signals.fd(), POLLIN, 0}, {events.fd(), POLLIN, 0}};
      group.addPollFds(fds);
      int rc = ::poll(fds.data(), fds.size(), pollTimeout());
      if (rc < 0 && errno != EINTR) throw SystemError("poll", "agent loop", errno);
      group.pumpOutput(fds);
      if (fds[0].revents) onSignals(signals.read());
      if (fds[1].revents) {
        events.drain();
        for (const JobEvent& e : watcher.take()) onEvent(e);
      }
      for (WorkerGroup::Member* m : group.reap()) onExit(*m);
      if (killAt && Clock::now() >= *killAt) {
        group.signalAll(SIGKILL);
        killAt.reset();
      }
      publishDoneOnce();
    }
    return result();
  }

  void startWorkers() {
    std::vector<std::vector<int>> shares = splitCpus(config.cpus, config.nproc);
    for (int local = 0; local < config.nproc; ++local) {
      int rank = world.firstRank + local;
      const std::vector<int>& cpus = shares[static_cast<size_t>(local)];
      WorkerSpec spec{config.program, environmentFor(rank, local, cpus),
                      config.bindCpus ? cpus : std::vector<int>{}};
      group.add(rank, local, spec, outputFor(rank, local));
    }
  }

  std::vector<std::string> environmentFor(int rank, int local,
                                          const std::vector<int>& cpus) {
    cluster::JobLayout layout = config.layout;
    layout.rank = rank;
    layout.worldSize = world.worldSize;
    layout.localRank = local;
    layout.localWorldSize = config.nproc;
    layout.nodeRank = config.nodeRank;
    layout.numNodes = config.numNodes;
    layout.masterHost = world.masterAddr;
    int share = static_cast<int>(config.cpus.size()) / std::max(config.nproc, 1);
    layout.cpusPerTask = cpus.empty() ? std::max(share, 1) : static_cast<int>(cpus.size());
    cluster::RankEnvironmentOptions o;
    o.site = config.site;
    o.restartCount = world.round;
    o.maxRestarts = config.maxRestarts;
    o.masterAddr = world.masterAddr;
    o.masterPort = world.masterPort;
    o.runId = config.runId;
    o.roleName = config.role;
    o.usableCpus = static_cast<int>(config.cpus.size());
    o.launcherVariables = {
        {"DISTRUN_STORE", fmt::format("{}:{}", config.storeHost, storePort)},
        {"DISTRUN_TOKEN", config.token},
        {"DISTRUN_RUN_ID", config.runId}};
    if (!config.logDir.empty()) {
      o.launcherVariables.push_back(
          {"TORCHELASTIC_ERROR_FILE", workerDir(local) + "/error.json"});
    }
    std::map<std::string, std::string> vars = processEnvironment();
    for (const auto& v : cluster::buildRankEnvironment(layout, env, o).variables) {
      vars[v.name] = v.value;
    }
    std::vector<std::string> out;
    for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
    return out;
  }

  std::string workerDir(int local) const {
    return fmt::format("{}/{}/attempt_{}/{}", config.logDir, config.runId,
                       world.round, local);
  }

  std::unique_ptr<WorkerOutput> outputFor(int rank, int local) {
    int redirect = streamBits(config.redirects, local);
    int tee = streamBits(config.tee, local);
    bool files = !config.logDir.empty();
    bool shown = !config.consoleRanks || config.consoleRanks->count(local);
    StreamRoute route;
    route.stdoutToFile = files || ((redirect | tee) & 1);
    route.stderrToFile = files || ((redirect | tee) & 2);
    route.stdoutToConsole = shown && !(redirect & 1);
    route.stderrToConsole = shown && !(redirect & 2);
    std::string prefix = expandPrefix(config.logPrefix, config.nodeRank, rank,
                                      local, config.role, config.host);
    return std::make_unique<WorkerOutput>(prefix, route, workerDir(local));
  }

  void onSignals(const std::vector<int>& received) {
    for (int s : received) {
      if (s == SIGCHLD) continue;  // reaped below
      if (isTerminal(s)) {
        if (signal) group.signalAll(SIGKILL);  // a second one: no grace
        takeSignal(s);
      }
      publish(JobEvent{Kind::kSignal, std::to_string(s)});
    }
  }

  void takeSignal(int s) {
    if (signal) return;
    signal = s;
    group.signalAll(s);
    stopping = true;
    killAt = Clock::now() + config.termTimeout;
  }

  void onEvent(const JobEvent& e) {
    switch (e.kind) {
      case Kind::kFailure:
        if (!rootCause) rootCause = WorkerFailure::fromJson(e.payload);
        stopWorkers();
        break;
      case Kind::kSignal: {
        int s = std::stoi(e.payload);
        if (isTerminal(s)) {
          takeSignal(s);
        } else {
          group.signalAll(s);
        }
        break;
      }
      case Kind::kComplete:
        complete = true;
        break;
      case Kind::kStoreLost:
        if (complete || rootCause || signal) break;  // the end is known
        lost = e.payload;
        stopWorkers();
        break;
    }
  }

  void onExit(WorkerGroup::Member& m) {
    if (m.exitCode == 0 && m.signal == 0) return;
    if (stopping) return;  // we stopped it, or the job already failed
    WorkerFailure f = group.failureOf(m, config.nodeRank, config.host);
    stopWorkers();  // fail fast here; the event stops the other nodes
    publish(JobEvent{Kind::kFailure, f.toJson()});
  }

  void stopWorkers() {
    if (stopping) return;
    stopping = true;
    group.signalAll(SIGTERM);
    killAt = Clock::now() + config.termTimeout;
  }

  void publish(const JobEvent& e) {
    try {
      publishEvent(store, world.round, e);
    } catch (const Error& error) {
      if (lost.empty()) lost = error.what();
      stopWorkers();
    }
  }

  void publishDoneOnce() {
    if (doneSent || stopping || !group.allExited() || !group.allSucceeded()) return;
    doneSent = true;
    try {
      long long done = store.add(rdzv::roundKey(world.round, "done"), 1);
      if (done == config.numNodes) publish(JobEvent{Kind::kComplete, ""});
    } catch (const Error& error) {
      lost = error.what();
    }
  }

  bool finished() const {
    if (!group.allExited()) return false;
    return complete || rootCause || signal || !lost.empty();
  }

  int pollTimeout() const {
    if (!killAt) return -1;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*killAt - Clock::now());
    return static_cast<int>(std::max<long long>(left.count(), 0)) + 1;
  }

  AttemptResult result() const {
    if (rootCause) return {Outcome::kFailed, *rootCause, 0, ""};
    if (signal) return {Outcome::kSignalled, {}, signal, ""};
    if (complete) return {Outcome::kSucceeded, {}, 0, ""};
    return {Outcome::kStoreLost, {}, 0, lost};
  }

  const AgentConfig& config;
  const Environment& env;
  rdzv::StoreClient& store;
  int storePort;
  rdzv::World world;
  SignalReader& signals;
  EventFd events;
  EventWatcher watcher;
  WorkerGroup group;
  std::optional<WorkerFailure> rootCause;
  int signal = 0;
  bool complete = false;
  bool stopping = false;
  bool doneSent = false;
  std::string lost;
  std::optional<Clock::time_point> killAt;
};

Agent::Agent(AgentConfig config, const Environment& env, std::ostream& err)
    : config_(std::move(config)), env_(env), err_(err) {}

int Agent::run() {
  becomeSubreaper();
  return runAttempts();
}

int Agent::runAttempts() {
  SignalReader signals;
  std::unique_ptr<rdzv::StoreServer> server;
  int port = config_.storePort;
  if (config_.nodeRank == 0) {
    raiseOpenFileLimit();
    std::string bind = config_.numNodes == 1 ? "127.0.0.1" : "0.0.0.0";
    server = std::make_unique<rdzv::StoreServer>(bind, port, config_.token);
    port = server->port();
  }
  rdzv::StoreClient store(config_.storeHost, port, config_.token, config_.joinTimeout);
  rdzv::RendezvousConfig rc{config_.nodeRank, config_.numNodes, config_.nproc,
                            config_.host, config_.joinTimeout, pickFreeTcpPort};
  for (int round = 0;; ++round) {
    int signal = 0;
    std::optional<rdzv::World> joined = joinOrSignal(store, round, rc, signals, &signal);
    if (!joined) return 128 + signal;
    const rdzv::World& world = *joined;
    AttemptResult r;
    {
      Round attempt(config_, env_, store, port, world, signals);
      r = attempt.run();
    }
    killAdoptedOrphans();
    if (r.outcome == Outcome::kFailed && round < config_.maxRestarts) {
      err_ << fmt::format(
          "distrun: node {}: rank {} failed ({}); restarting all workers "
          "(restart {} of {})\n",
          config_.nodeRank, r.failure.rank,
          r.failure.signal ? fmt::format("signal {}", r.failure.signal)
                           : fmt::format("exit code {}", r.failure.exitCode),
          round + 1, config_.maxRestarts);
      continue;
    }
    int code = 0;
    if (r.outcome == Outcome::kFailed) code = reportFailure(r.failure, round);
    if (r.outcome == Outcome::kSignalled) code = 128 + r.signal;
    if (r.outcome == Outcome::kStoreLost) {
      throw RendezvousError(fmt::format(
          "node {} lost the rendezvous store at {}:{} (did node 0's agent "
          "die?): {}",
          config_.nodeRank, config_.storeHost, port, r.why));
    }
    return finish(store, round, code);
  }
}

int Agent::reportFailure(const WorkerFailure& f, int round) {
  if (config_.nodeRank == 0) {
    printFailureReport(f, config_.runId, round + 1, err_);
  } else {
    err_ << fmt::format("distrun: node {}: stopped: rank {} on node {} failed\n",
                        config_.nodeRank, f.rank, f.nodeRank);
  }
  if (!config_.logDir.empty()) {
    std::string dir = config_.logDir + "/" + config_.runId;
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/failure.json") << f.toJson() << "\n";
  }
  return f.agentExitCode();
}

// Every agent says it is leaving; node 0 keeps the store up until all have
// read the end of the job (or kExitBarrier passes).
int Agent::finish(rdzv::StoreClient& store, int round, int code) {
  try {
    long long exited = store.add(rdzv::roundKey(round, "exited"), 1);
    if (exited == config_.numNodes) store.set(rdzv::roundKey(round, "all_exited"), "1");
    if (config_.nodeRank == 0) store.get(rdzv::roundKey(round, "all_exited"), kExitBarrier);
  } catch (const Error&) {
    // The store is gone: nobody is left to wait for.
  }
  return code;
}

std::vector<std::vector<int>> splitCpus(const std::vector<int>& cpus,
                                        int workers) {
  std::vector<std::vector<int>> shares(static_cast<size_t>(std::max(workers, 0)));
  if (workers <= 0 || static_cast<int>(cpus.size()) < workers) return shares;
  size_t each = cpus.size() / static_cast<size_t>(workers);
  size_t extra = cpus.size() % static_cast<size_t>(workers);
  size_t next = 0;
  for (size_t w = 0; w < shares.size(); ++w) {
    size_t count = each + (w < extra ? 1 : 0);
    shares[w].assign(cpus.begin() + static_cast<long>(next),
                     cpus.begin() + static_cast<long>(next + count));
    next += count;
  }
  return shares;
}

}  // namespace distrun::launch
