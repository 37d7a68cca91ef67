#pragma once

#include <string>
#include <vector>

namespace distrun {

// What a finished command-line tool (sbatch, squeue, scontrol) left behind.
struct ToolResult {
  int exitCode = -1;  // 128+N when killed by signal N; 127 when not found
  std::string out;
  std::string err;
};

// Runs `argv` (looked up on PATH) with `input` on its standard input and
// waits for it, collecting both outputs. Never throws for a failing tool:
// the caller words the failure in its own terms. SystemError (71) only
// when the pipes or the process cannot be made.
ToolResult runTool(const std::vector<std::string>& argv, const std::string& input = "");

}  // namespace distrun
