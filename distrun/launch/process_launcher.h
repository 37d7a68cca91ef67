#pragma once

#include <sys/types.h>

#include <vector>

#include "distrun/launch/worker.h"

namespace distrun::launch {

// How the agent starts, signals and reaps worker processes: the seam
// between its loop and fork/exec, killpg and waitpid, so a test can stand
// in for the processes. Used from the agent's thread only.
class ProcessLauncher {
 public:
  // A child that has exited: its exit code, or the signal that killed it.
  struct Exit {
    pid_t pid = -1;
    int exitCode = 0;
    int signal = 0;
  };

  virtual ~ProcessLauncher() = default;
  // Starts a worker as spawnWorker does; throws SystemError.
  virtual WorkerProcess start(const WorkerSpec& spec) = 0;
  // Sends `signal` to the process group `group`, if it is still there.
  virtual void signal(pid_t group, int signal) = 0;
  // The children of this process that have exited (workers and adopted
  // orphans alike), without blocking.
  virtual std::vector<Exit> reap() = 0;
  // Blocks until the child `pid` has exited, and reaps it.
  virtual void waitFor(pid_t pid) = 0;
  // If the worker `pid` is exiting (its main thread has left, others have
  // yet to), lets it finish on busy cores: see hurryExit in worker.h.
  virtual void hurryExit(pid_t pid) = 0;
};

// The real processes: spawnWorker, signalWorker, waitpid.
class SystemProcessLauncher : public ProcessLauncher {
 public:
  WorkerProcess start(const WorkerSpec& spec) override;
  void signal(pid_t group, int signal) override;
  std::vector<Exit> reap() override;
  void waitFor(pid_t pid) override;
  void hurryExit(pid_t pid) override;
};

// One SystemProcessLauncher for the whole process (it holds no state).
ProcessLauncher& systemProcessLauncher();

}  // namespace distrun::launch
