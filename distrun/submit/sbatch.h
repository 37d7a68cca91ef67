#pragma once

#include <functional>
#include <string>
#include <vector>

#include "distrun/common/tool_process.h"

namespace distrun::submit {

// Runs a Slurm client command (sbatch, squeue, scontrol, sacct, scancel)
// with its standard input: runTool, or a script of answers in tests.
using SlurmTool =
    std::function<ToolResult(const std::vector<std::string>& argv, const std::string& input)>;

struct SubmittedJob {
  std::string id;       // "4242"
  std::string cluster;  // empty unless sbatch named one ("4242;lumi")
};

// Submits `script` with `sbatch --parsable` (the script on its standard
// input, as `sbatch < job.sh`). Errors, in one line: sbatch missing (127,
// "run distrun submit where Slurm's commands are"), sbatch refusing the job
// (78, its own message relayed: "sbatch refused the job: invalid account
// or account/partition combination specified"), or an answer that is no
// job id (70).
SubmittedJob submitScript(const SlurmTool& slurm, const std::string& script);

// What to relay of a Slurm command's error output, without its "sbatch:
// error: " prefix: its fatal line, else its first error line, else its
// first line.
std::string slurmMessage(const ToolResult& result);

}  // namespace distrun::submit
