#include "distrun/trace/agent_trace.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/trace/clock.h"
#include "distrun/trace/event.h"
#include "distrun/trace/recorder.h"

namespace distrun::trace {

AgentTrace::AgentTrace(const Environment& env, int nodeRank, std::ostream& warnings)
    : config_(readTraceConfig(env)), warnings_(warnings), nodeRank_(nodeRank) {
  if (on()) prepareFolder(config_.folder, kFolderName);
}

AgentTrace::~AgentTrace() = default;

Recorder* AgentTrace::recorder() {
  if (recorder_ || !on()) return recorder_.get();
  Header h;
  h.process = "agent";
  h.worldSize = worldSize_;
  h.nodeRank = nodeRank_;
  h.host = readHostFacts().hostname;
  h.pid = static_cast<long>(::getpid());
  h.monotonicUs = monotonicUs();
  h.realtimeUs = realtimeUs();
  RecorderOptions options{.path = fmt::format("{}/agent{}.jsonl", config_.folder, nodeRank_),
                          .maxBytes = config_.maxBytes};
  try {
    recorder_ = std::make_unique<Recorder>(std::move(options), h, warnings_);
  } catch (const Error& e) {  // the folder was writable at the start: warn, do not end the job
    warnings_ << "distrun: warning: " << e.what() << "; the agent's trace is off\n";
    config_.folder.clear();
  }
  return recorder_.get();
}

void AgentTrace::instant(const char* name, const Args& args) {
  if (Recorder* r = recorder())
    r->write(instantLine(name, "launcher", Thread::kLauncher, monotonicUs(), args));
}

void AgentTrace::rendezvousStarted(int /*round*/) {
  if (on()) joinStartUs_ = monotonicUs();
}

void AgentTrace::rendezvousDone(int round, int worldSize, int nodes, int nodeRank) {
  if (!on()) return;
  if (!recorder_) {
    nodeRank_ = nodeRank;
    worldSize_ = worldSize;
  }
  const double end = monotonicUs();
  const double start = joinStartUs_ >= 0 ? joinStartUs_ : end;
  Args args;
  args.add("round", round).add("world_size", worldSize).add("nodes", nodes);
  args.add("node_rank", nodeRank);
  if (Recorder* r = recorder()) {
    r->write(spanLine("rendezvous", "launcher", Thread::kLauncher, start, end - start, args));
  }
  joinStartUs_ = -1;
}

void AgentTrace::workerStarted(int rank, int localRank, int pid, int restart) {
  if (!on()) return;
  instant("worker_started", Args()
                                .add("rank", rank)
                                .add("local_rank", localRank)
                                .add("pid", pid)
                                .add("restart", restart));
}

void AgentTrace::restarted(int restart, int round) {
  if (on()) instant("restart", Args().add("restart", restart).add("round", round));
}

void AgentTrace::workerExited(int rank, int localRank, int pid, int exitCode, int signal) {
  if (!on()) return;
  Args args;
  args.add("rank", rank).add("local_rank", localRank).add("pid", pid);
  if (signal != 0) {
    args.add("signal", signal);
  } else {
    args.add("exit_code", exitCode);
  }
  instant("worker_exited", args);
}

// SIGCHLD, which the agent reads for every worker's exit, is left out.
void AgentTrace::signalReceived(int signal) {
  if (on() && signal != SIGCHLD) instant("signal_received", Args().add("signal", signal));
}

void AgentTrace::signalForwarded(int signal) {
  if (on()) instant("signal_forwarded", Args().add("signal", signal));
}

void AgentTrace::workersKilled() {
  if (on()) instant("workers_killed", Args());
}

void AgentTrace::jobEvent(const char* name, const Args& args) {
  if (on()) instant(name, args);
}

}  // namespace distrun::trace
