#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "distrun/common/unique_fd.h"

namespace distrun::launch {

// What to start for one worker.
struct WorkerSpec {
  std::vector<std::string> argv;         // argv[0] is looked up in PATH
  std::vector<std::string> environment;  // "NAME=value", the whole environment
  std::vector<int> cpus;                 // affinity; empty: inherit
  std::string errorFile = {};            // its TORCHELASTIC_ERROR_FILE, read when it fails
};

// The descriptor on which a worker reports its progress (--hang-timeout;
// docs/launcher.md, "Hung workers"): any bytes written to it, one per step
// is enough. The worker's environment names it in DISTRUN_PROGRESS_FD.
inline constexpr int kProgressFd = 3;

// A started worker and the read ends of its output and progress pipes
// (non-blocking), which close with it. Move-only.
struct WorkerProcess {
  pid_t pid = -1;  // also its process group id
  UniqueFd stdoutFd;
  UniqueFd stderrFd;
  UniqueFd progressFd;  // invalid when the launcher gives none (tests)
};

// Forks and execs `spec`. The child leads its own process group (so the
// agent can signal it and everything it starts with killpg), dies with
// SIGKILL if the agent dies (PR_SET_PDEATHSIG), gets `spec.cpus` as its
// affinity, writes stdout/stderr into pipes the agent reads, and holds the
// write end of its progress pipe as kProgressFd (non-blocking). When exec
// fails the child prints `distrun: error: cannot run 'X': reason` to its
// stderr pipe and exits 127 (not found) or 126. Throws SystemError when
// fork or pipe fail.
WorkerProcess spawnWorker(const WorkerSpec& spec);

// Sends `signal` to the worker's whole process group; ignores groups that
// are already gone.
void signalWorker(pid_t pid, int signal);

// If the worker `pid` is exiting, gives its threads of the SCHED_IDLE class
// (comm's IdleSpinner) the normal class back, and returns how many. A
// process is reaped only once its last thread has left, and on busy cores
// a SCHED_IDLE thread gets almost no CPU: a SIGKILLed worker (the OOM
// killer's) then held its memory and its exit for tens of seconds while
// that thread unmapped it. "Exiting" is a main thread that has left (a
// zombie) while others have not. The kernel allows the change to root,
// CAP_SYS_NICE or an RLIMIT_NICE of 20 (ulimit -e 20) only: elsewhere this
// returns 0 and the exit takes what it takes. Does nothing to a running
// worker.
int hurryExit(pid_t pid);

// Makes this process a child subreaper: orphaned descendants (a worker's
// setsid'd grandchildren) are re-parented to it rather than to init, so the
// agent can reap and kill them. Throws SystemError.
void becomeSubreaper();

// Sends SIGKILL to every process whose parent is this process (after the
// workers are gone, these are orphans re-parented to the subreaper) and
// reaps them, so none is alive when it returns. Returns how many there were.
int killAdoptedOrphans();

}  // namespace distrun::launch
