#pragma once

// Starting a program as a child process: the one place distrun forks and
// execs (the static distrun-sandbox keeps its own, container/sandbox_process.h,
// and shares only wait_status.h). The child is set up between vfork and exec
// with system calls only, from what startProcess prepared before: it may be
// started from a process with threads (the doctor's checks), and it borrows
// the parent's memory until it execs, so no page table is copied (a fork of
// the agent cost about 0.3 ms a worker, bench/launch.sh).

#include <fcntl.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "distrun/common/unique_fd.h"

namespace distrun {

// One descriptor of the child: this process's `source` put at `target`, open
// across exec (`source == target`: only its close-on-exec flag cleared), or,
// when `path` is given, that file opened there by the child with `openFlags`
// (mode 0644; the child exits 126 when it cannot).
struct ChildDescriptor {
  int target;
  int source = -1;
  std::string path = {};
  int openFlags = O_RDONLY;
};

struct ProcessSpec {
  // argv[0] is looked up on PATH unless it holds a '/' (findProgram); a file
  // the kernel cannot run (a script without #!) is run by /bin/sh, as
  // execvp does.
  std::vector<std::string> argv;
  // The child's whole environment, "NAME=value"; nullopt: this process's.
  std::optional<std::vector<std::string>> environment = std::nullopt;
  // argv[0] is looked up on the PATH of `environment` (a tool run with an
  // environment of its own), else on this process's.
  bool pathOfItsEnvironment = false;
  // Set up in order; every other descriptor is inherited as it is (those
  // made with O_CLOEXEC, as distrun makes all of its own, close at exec).
  std::vector<ChildDescriptor> descriptors = {};
  // The child leads a process group of its own; set by both processes, so
  // that a signal to the group reaches it however early.
  bool ownProcessGroup = false;
  // Sent to the child when the thread that started it ends
  // (PR_SET_PDEATHSIG); a parent that is gone already before the child got
  // that far makes it exit 128 + the signal. 0: none.
  int parentDeathSignal = 0;
  // The child's signal mask: empty, or (false) the starting thread's.
  bool emptySignalMask = false;
  // Signals whose disposition the child resets to the default (those this
  // process handles or ignores that the program must not inherit).
  std::vector<int> defaultSignals = {};
  // The child's CPU affinity; empty: inherited.
  std::vector<int> cpus = {};
  // When exec fails, the child writes "distrun: error: cannot run 'X':
  // reason" to its standard error; either way it exits 127 (not found) or 126.
  bool explainExecFailure = false;
};

// Starts `spec`'s program and returns its pid; the caller reaps it
// (waitForProcess, or waitpid of its own). SystemError (71) when the child
// cannot be made.
pid_t startProcess(const ProcessSpec& spec);

// Waits for `pid` to end and returns its exit as a shell reports it
// (shellStatus: the code, or 128+N for signal N). SystemError when it is not
// this process's child.
int waitForProcess(pid_t pid);

// The PATH execvp searches when the environment has none (glibc's).
inline constexpr const char* kDefaultProgramPath = "/bin:/usr/bin";

// Whether `file` is a regular file this process may execute.
bool isExecutableFile(const std::string& file);

// Where `program` is run from: itself when it holds a '/', else the first
// executable file of that name in the folders of `path` (empty entries are
// the current folder, as for execvp), relative folders taken from
// `workingDir` (a worker's, before it runs there); nullopt when there is
// none. The path returned is as PATH gives it, not joined to `workingDir`.
std::optional<std::string> findProgram(const std::string& program, const std::string& path,
                                       const std::string& workingDir = ".");

// A pipe for a child's input or output, both ends close-on-exec (a
// ChildDescriptor puts the child's end in place). Throws SystemError naming
// `what` (the pipe's purpose: "worker output").
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};
Pipe makePipe(std::string_view what);

}  // namespace distrun
