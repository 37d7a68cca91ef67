#include "distrun/submit/job_status.h"

#include <fstream>

#include <fmt/format.h>

namespace distrun::submit {

namespace {

// What sbatch's %c means inside the job, as shell text; nullopt for the
// letters that name a node or task.
std::optional<std::string> shellFor(char c) {
  switch (c) {
    case 'j':
      return "${SLURM_JOB_ID}";
    case 'A':
      return "${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}";
    case 'x':
      return "${SLURM_JOB_NAME}";
    case 'u':
      return "$(id -un)";
    case '%':
      return "%";
    default:
      return std::nullopt;
  }
}

// `c` inside double quotes.
std::string quotedChar(char c) {
  if (c == '$' || c == '`' || c == '"' || c == '\\') return std::string("\\") + c;
  return std::string(1, c);
}

}  // namespace

std::string statusFileOf(const std::string& outputPath) { return outputPath + ".status"; }

std::optional<std::string> statusFileWord(const std::string& outputPattern) {
  std::string word = "\"";
  for (size_t i = 0; i < outputPattern.size(); ++i) {
    if (outputPattern[i] != '%' || i + 1 == outputPattern.size()) {
      word += quotedChar(outputPattern[i]);
      continue;
    }
    std::optional<std::string> shell = shellFor(outputPattern[++i]);
    if (!shell) return std::nullopt;
    word += *shell;
  }
  return word + quotedChar('.') + "status\"";
}

std::optional<StatusRecord> readStatusFile(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return parseStatusRecord(line);
}

std::string jobStatusText(const std::string& jobId, const std::string& state, double secondsInState,
                          const std::optional<StatusRecord>& record) {
  std::string text = fmt::format("job {} {} {}", jobId, state, formatDuration(secondsInState));
  const std::string progress = record ? describeStatus(*record) : "";
  return progress.empty() ? text : text + "  " + progress;
}

}  // namespace distrun::submit
