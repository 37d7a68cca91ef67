#pragma once

#include <iosfwd>
#include <memory>
#include <string_view>

#include "distrun/common/environment.h"
#include "distrun/trace/args.h"
#include "distrun/trace/config.h"

namespace distrun::trace {

class Recorder;

// A node agent's trace (docs/observability.md): its own events, instants
// on the thread "launcher" (cat "launcher") in DISTRUN_TRACE/agent<N>.jsonl,
// N the node rank. Every call is a no-op when DISTRUN_TRACE is unset.
// Times are this host's CLOCK_MONOTONIC (no test skew: that is the ranks').
// Not thread-safe: the agent's loop thread calls it.
class AgentTrace {
 public:
  // Reads DISTRUN_TRACE* from `env` and, when set, creates the folder now,
  // so that a mistake stops the agent before any worker starts: UsageError
  // (64) for a malformed value, IoError (74) naming DISTRUN_TRACE (--trace).
  // The file is created at the first event, named by the node rank then
  // (`nodeRank`, or the one a rendezvous gave: rendezvousDone).
  AgentTrace(const Environment& env, int nodeRank, std::ostream& warnings);
  ~AgentTrace();
  AgentTrace(const AgentTrace&) = delete;
  AgentTrace& operator=(const AgentTrace&) = delete;

  bool on() const { return config_.on(); }

  // "rendezvous": a span from the join's start to its end (round,
  // world_size, nodes, node_rank).
  void rendezvousStarted(int round);
  void rendezvousDone(int round, int worldSize, int nodes, int nodeRank);
  // "worker_started" (rank, local_rank, pid, restart); "restart" (restart,
  // round) before a restarted round's workers.
  void workerStarted(int rank, int localRank, int pid, int restart);
  void restarted(int restart, int round);
  // "worker_exited" (rank, local_rank, pid, and exit_code or signal).
  void workerExited(int rank, int localRank, int pid, int exitCode, int signal);
  // "signal_received" by the agent (SIGCHLD left out); "signal_forwarded"
  // to the workers;
  // "workers_killed" (SIGKILL to every worker).
  void signalReceived(int signal);
  void signalForwarded(int signal);
  void workersKilled();
  // A job event from the store: "hang", "node_lost", "job_failure", ...
  void jobEvent(const char* name, const Args& args);

 private:
  void instant(const char* name, const Args& args);
  Recorder* recorder();

  TraceConfig config_;
  std::ostream& warnings_;
  int nodeRank_;
  int worldSize_ = 0;
  double joinStartUs_ = -1;
  std::unique_ptr<Recorder> recorder_;
};

}  // namespace distrun::trace
