#pragma once

// The processes around a program in distrun's own container runtime, and
// why there are two of them (docs/containers.md, "Signals and exit status").
//
// bubblewrap 0.8 forwards no signal: a SIGTERM or SIGUSR1 sent to bwrap
// kills it, and --die-with-parent then kills the program with SIGKILL
// before it can react. So bwrap runs with the forwarded signals blocked
// (it never unblocks them; they die pending with it), and inside the
// sandbox `distrun-sandbox start` runs the program with an empty signal
// mask. bwrap also turns a program's death by signal N into exit code
// 128+N, so `start` writes the program's own wait status into a pipe that
// `distrun-sandbox supervise` (outside, the process the agent waits for)
// reads, and `supervise` ends the way the program ended: killed by the same
// signal, or with the same code.
//
//   agent -> distrun-sandbox supervise -> bwrap -> distrun-sandbox start -> program
//            (worker pid, forwards)       (blocked)  (waits, reports)       (empty mask)
//
// This file uses libc and the C++ standard library only: distrun-sandbox is
// linked statically so that it runs inside any image.
#include <csignal>
#include <string>
#include <vector>

#include "distrun/common/wait_status.h"

namespace distrun::container {

// The signals a program in a container gets as it would outside: the ones
// the agent forwards to its workers and Slurm sends before a time limit.
inline constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// The variable naming the status pipe's descriptor, for `start`.
inline constexpr const char* kStatusFdVariable = "DISTRUN_SANDBOX_STATUS_FD";

// Runs `argv` (argv[0] looked up on PATH) as a child leading a process group
// of its own, with the forwarded signals blocked, and waits for it. Each
// forwarded signal this process gets goes to the child's group (a signal
// this process ignores stays ignored and is not forwarded); when this
// process is in the foreground of its terminal, the child's group is for
// the child's lifetime. With `statusPipe` the child's environment names a
// pipe (kStatusFdVariable) and the wait status written there by `start`
// is returned instead of the child's own. Returns a wait status; an exec
// failure is exit 127 (not found) or 126 with a line on stderr. Throws
// std::system_error when pipe or fork fail. Not thread-safe: it installs
// process-wide signal handlers for its duration (and restores them).
int superviseChild(const std::vector<std::string>& argv, bool statusPipe);

// Runs `argv` as a child with an empty signal mask that dies with this
// process (PR_SET_PDEATHSIG), waits for it while the forwarded signals stay
// blocked here, writes its wait status into the pipe kStatusFdVariable
// names (when set; the variable is removed from the child's environment),
// and returns its status as a shell does. An exec failure is reported as
// `distrun: error: cannot run 'X': reason` with 127 or 126, as the agent
// does for a program outside. Throws std::system_error when fork fails.
int startProgram(const std::vector<std::string>& argv);

// Ends this process as `waitStatus` says: with its exit code, or killed by
// its signal (with core files turned off, so the signal's action is the
// only effect; 128+N if the signal does not end a process).
[[noreturn]] void exitLike(int waitStatus);

// The command line of distrun-sandbox (args without argv[0]):
//   supervise -- PROGRAM [ARGS]   superviseChild with the status pipe, then exitLike
//   start -- PROGRAM [ARGS]       startProgram
// Returns the exit code for main (64 with a usage line on stderr for other
// arguments, 71 when a call failed); `supervise` ends the process itself.
int runSandboxTool(const std::vector<std::string>& args);

}  // namespace distrun::container
