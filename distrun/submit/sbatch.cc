#include "distrun/submit/sbatch.h"

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::submit {
namespace {

bool isJobId(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

// A Slurm client's fatal line says why it gave up ("Could not establish a
// configuration source"); without one, its first error line is the refusal.
std::string slurmMessage(const ToolResult& result) {
  std::string firstError, firstLine;
  for (const std::string& raw : split(result.err.empty() ? result.out : result.err, '\n')) {
    std::string line(trim(raw));
    if (size_t at = line.find(": fatal: "); at != std::string::npos) return line.substr(at + 9);
    size_t at = line.find(": error: ");
    if (at != std::string::npos && firstError.empty()) firstError = line.substr(at + 9);
    if (firstLine.empty()) firstLine = line;
  }
  if (!firstError.empty()) return firstError;
  return firstLine.empty()
             ? fmt::format("it exited with status {} and said nothing", result.exitCode)
             : firstLine;
}

SubmittedJob submitScript(const SlurmTool& slurm, const std::string& script) {
  ToolResult result = slurm({"sbatch", "--parsable"}, script);
  if (result.exitCode == 127) {
    throw Error(ExitCode::kNotFound,
                "submit: sbatch not found on PATH: run distrun submit where Slurm's commands "
                "are (a login node), or use --dry-run to print the script");
  }
  if (result.exitCode != 0) {
    throw ConfigError("submit: sbatch refused the job: " + slurmMessage(result));
  }
  std::string answer(trim(result.out.substr(0, result.out.find('\n'))));
  std::vector<std::string> parts = split(answer, ';');
  if (!isJobId(parts[0])) {
    throw Error(ExitCode::kInternal,
                fmt::format("submit: sbatch --parsable answered '{}', not a job id", answer));
  }
  return {parts[0], parts.size() > 1 ? parts[1] : ""};
}

}  // namespace distrun::submit
