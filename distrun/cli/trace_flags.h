#pragma once

// `distrun train --trace DIR [--trace-steps A:B] [--trace-max-mb N]`
// (docs/observability.md, "Recording a trace"): the launcher-side flags
// that turn on the recording of every rank and agent of the job, passed
// on as the DISTRUN_TRACE* variables distrun's runtime reads.
#include <map>
#include <optional>
#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace distrun::cli {

struct TraceFlags {
  std::optional<std::string> folder;  // --trace DIR
  std::optional<std::string> steps;   // --trace-steps A:B
  std::optional<std::string> maxMb;   // --trace-max-mb N
};

void addTraceFlags(CLI::App* cmd, TraceFlags& flags);

// The variables to set for the agent and its workers: DISTRUN_TRACE (the
// folder, made absolute), DISTRUN_TRACE_STEPS, DISTRUN_TRACE_MAX_MB; none
// without --trace. Checked before anything starts: UsageError (64) naming
// the flag for a malformed value, or --trace-steps/--trace-max-mb without
// --trace; IoError (74) when the folder cannot be made or written.
std::map<std::string, std::string> traceVariables(const TraceFlags& flags);

}  // namespace distrun::cli
