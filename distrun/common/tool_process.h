#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace distrun {

// What a finished command-line tool (sbatch, squeue, scontrol) left behind.
struct ToolResult {
  int exitCode = -1;  // 128+N when killed by signal N; 127 when not found
  std::string out;
  std::string err;
  // runToolWithin: the limit passed first and the tool's process group was
  // killed; `out` and `err` hold what it wrote until then.
  bool timedOut = false;
};

// Runs `argv` (looked up on PATH) with `input` on its standard input and
// waits for it, collecting both outputs. Never throws for a failing tool:
// the caller words the failure in its own terms. SystemError (71) only
// when the pipes or the process cannot be made.
ToolResult runTool(const std::vector<std::string>& argv, const std::string& input = "");

// A tool to run within a time limit (runToolWithin).
struct ToolRequest {
  std::vector<std::string> argv;  // argv[0] looked up on the PATH of `environment`
  std::string input;              // its standard input
  std::chrono::milliseconds limit{60'000};
  // The tool's whole environment; nullopt: this process's.
  std::optional<std::map<std::string, std::string>> environment;
};

// Like runTool, but the tool runs in a process group of its own, and when
// `limit` passes before it ends (or before everything it started has closed
// its output), the whole group is killed with SIGKILL and the tool reaped:
// the result then has timedOut set and exit code 137 (the tool's own when
// only what it started outlived the limit). A tool stuck where
// SIGKILL cannot reach it (a hung file system) is given up on after a short
// wait, so the call itself stays bounded. Thread-safe: checks run tools
// from several threads at once. SystemError (71) as runTool.
ToolResult runToolWithin(const ToolRequest& request);

}  // namespace distrun
