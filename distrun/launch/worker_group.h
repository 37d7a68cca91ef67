#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "distrun/launch/failure_report.h"
#include "distrun/launch/worker.h"
#include "distrun/launch/worker_output.h"

namespace distrun::launch {

// The workers of one node for one attempt, with their output. Owned and
// driven by the agent's loop on one thread.
class WorkerGroup {
 public:
  struct Member {
    int rank;
    int localRank;
    WorkerProcess process;
    std::unique_ptr<WorkerOutput> output;
    bool running = true;
    int exitCode = 0;
    int signal = 0;
  };

  WorkerGroup() = default;
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;
  ~WorkerGroup();

  void add(int rank, int localRank, const WorkerSpec& spec,
           std::unique_ptr<WorkerOutput> output);

  // Poll entries for every open output pipe, appended to `fds`.
  void addPollFds(std::vector<pollfd>& fds) const;
  // Drains the pipes that `fds` reports readable or closed.
  void pumpOutput(const std::vector<pollfd>& fds);

  // Reaps every exited child (workers and adopted orphans) without blocking.
  // A worker's pipes are drained and closed when it exits. Returns the
  // workers that exited in this call.
  std::vector<Member*> reap();

  // Signals every running worker's process group.
  void signalAll(int signal);
  bool allExited() const;
  bool allSucceeded() const;
  // The failure record of a worker that exited badly (reaped, so its
  // stderr tail is complete).
  WorkerFailure failureOf(const Member& m, int nodeRank,
                          const std::string& host) const;

 private:
  void drain(Member& m);
  void closePipes(Member& m);
  std::vector<Member> members_;
};

}  // namespace distrun::launch
