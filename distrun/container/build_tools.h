#pragma once

// How `distrun wrap` runs mmdebstrap, unsquashfs, cp and mksquashfs: the
// seam between the build's steps and real processes, so the steps are
// unit-tested with a fake; and the interrupt (SIGINT, SIGTERM) that stops
// a build, its tool included, with nothing left behind.
#include <csignal>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace distrun::container {

// A build stopped by SIGINT or SIGTERM. Not a distrun::Error: the command
// exits 128 + signal, as a shell reports a program a signal ended.
class BuildInterrupted : public std::exception {
 public:
  explicit BuildInterrupted(int signal) : signal_(signal) {}
  int signal() const { return signal_; }
  const char* what() const noexcept override { return "interrupted"; }

 private:
  int signal_;
};

// One run of a tool.
struct ToolCall {
  std::vector<std::string> argv;  // looked up on PATH
  // Called with the tool's recent output (stdout and stderr together, the
  // last few KiB) whenever more arrives.
  std::function<void(std::string_view recent)> onOutput = {};
  // Called about every `tickSeconds` while the tool runs.
  std::function<void()> onTick = {};
  double tickSeconds = 2.0;
  // When set, the tool's standard output goes to this file (created or
  // truncated) instead of the pipe; its standard error still is read.
  std::string stdoutPath = {};
};

// How a tool ended.
struct ToolExit {
  int code = 0;      // its exit status; 128 + N when signal N ended it
  std::string tail;  // the last lines of its output, for the error message
};

// Runs tools to completion. Throws BuildInterrupted when the build is
// interrupted while the tool runs (the tool is stopped first), and
// SystemError when the tool cannot be started.
class BuildTools {
 public:
  virtual ~BuildTools() = default;
  virtual ToolExit run(const ToolCall& call) = 0;
};

// Catches SIGINT and SIGTERM for its lifetime (the previous handlers come
// back when it goes): caught() is the signal that arrived, 0 while none
// has. One at a time per process.
class InterruptCatcher {
 public:
  InterruptCatcher();
  ~InterruptCatcher();
  InterruptCatcher(const InterruptCatcher&) = delete;
  InterruptCatcher& operator=(const InterruptCatcher&) = delete;
  int caught() const;

 private:
  struct sigaction previousInt_ {};
  struct sigaction previousTerm_ {};
};

// Runs each tool as a child in its own process group, with /dev/null as
// its input, its output read through a pipe, and PR_SET_PDEATHSIG so it
// dies with distrun. When `interrupted()` turns non-zero the runner sends
// that signal to the tool's group, waits `graceSeconds` for it to clean up
// (mmdebstrap unmounts what it mounted), then SIGKILLs the group, and
// throws BuildInterrupted.
class ProcessBuildTools : public BuildTools {
 public:
  explicit ProcessBuildTools(std::function<int()> interrupted, double graceSeconds = 30.0);
  ToolExit run(const ToolCall& call) override;

 private:
  std::function<int()> interrupted_;
  double graceSeconds_;
};

}  // namespace distrun::container
