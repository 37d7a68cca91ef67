#pragma once

#include <poll.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distrun/common/status_record.h"
#include "distrun/launch/failure_report.h"
#include "distrun/launch/process_launcher.h"
#include "distrun/launch/progress_probe.h"
#include "distrun/launch/status_line.h"
#include "distrun/launch/worker.h"
#include "distrun/launch/worker_output.h"

namespace distrun::launch {

// The workers of one node for one round, with their output: the mechanics
// the agent's loop drives (start, pipes, signals, reaping); what to do
// about an exit is the Supervisor's. Owned and driven by the agent's loop
// on one thread. Destroying it SIGKILLs the workers still running and
// waits for them. `launcher` must outlive it.
class WorkerGroup {
 public:
  // `nodeRank` and `host` go into the exit records.
  WorkerGroup(ProcessLauncher& launcher, int nodeRank, std::string host);
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;
  ~WorkerGroup();

  // Starts a worker and returns its pid; throws SystemError when it cannot
  // be started.
  int add(int rank, int localRank, const WorkerSpec& spec, std::unique_ptr<WorkerOutput> output);

  // Poll entries for every open output and progress pipe, appended to `fds`.
  void addPollFds(std::vector<pollfd>& fds) const;
  // Drains the pipes that `fds` reports readable or closed: output to the
  // worker's WorkerOutput, progress reports counted.
  void pumpOutput(const std::vector<pollfd>& fds);

  // Reaps every exited child (workers and adopted orphans) without blocking.
  // A worker's pipes are drained and closed when it exits. Returns the exit
  // record of each worker that exited in this call (its stderr tail is
  // complete then); exitCode and signal are 0 for a clean exit.
  std::vector<WorkerFailure> reap();

  // Signals every running worker's process group.
  void signalAll(int signal);
  // Lets every running worker that is exiting finish (hurryExit, worker.h).
  void hurryExiting();

  // The progress counters of every running worker (--hang-timeout): its
  // group's CPU time from `probe`, the bytes it wrote so far and the bytes
  // it reported on its progress pipe.
  // A worker that made no progress since the last call (madeProgress) also
  // gets where its threads wait (ProgressProbe::waitChannels) in its record.
  std::vector<WorkerProgress> progress(const ProgressProbe& probe);

  // The latest status record of every worker of the round that wrote one
  // on its progress pipe (docs/launcher.md, "Status records"), in rank order.
  std::vector<RankStatus> statuses() const;

 private:
  struct Member {
    int rank;
    int localRank;
    WorkerProcess process;
    std::unique_ptr<WorkerOutput> output;
    std::string errorFile;
    bool running = true;
    int exitCode = 0;
    int signal = 0;
    long long outputBytes = 0;                   // read from its stdout and stderr
    long long reports = 0;                       // bytes read from its progress pipe
    StatusRecordReader status{};                 // the records among them
    std::optional<WorkerProgress> lastSample{};  // its counters at the last progress()
  };

  Member* memberWithPid(pid_t pid);
  void finishExit(Member& m, const ProcessLauncher::Exit& exit);
  WorkerFailure recordOf(const Member& m) const;
  int raisedBefore(const WorkerFailure& f) const;
  void drain(Member& m);
  static bool pumpReports(Member& m, int fd);

  ProcessLauncher& launcher_;
  int nodeRank_;
  std::string host_;
  std::vector<Member> members_;
};

}  // namespace distrun::launch
