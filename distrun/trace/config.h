#pragma once

// What to record, from the environment (docs/observability.md, "Recording
// a trace"): DISTRUN_TRACE=DIR turns recording on, DISTRUN_TRACE_STEPS=A:B
// picks a window of global steps, DISTRUN_TRACE_MAX_MB caps each file, and
// DISTRUN_TRACE_CLOCK_SKEW_US (for tests) shifts each rank's clock.
// `distrun train --trace DIR --trace-steps A:B --trace-max-mb N` sets them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "distrun/common/environment.h"

namespace distrun::trace {

inline constexpr int64_t kDefaultMaxMb = 100;

// Global training steps first..last, counted from 1, both included.
struct StepWindow {
  int64_t first = 1;
  int64_t last = 1;
  bool contains(int64_t step) const { return step >= first && step <= last; }
};

struct TraceConfig {
  std::string folder;                // DISTRUN_TRACE; empty: recording is off
  std::optional<StepWindow> window;  // DISTRUN_TRACE_STEPS; unset: every event
  uint64_t maxBytes = static_cast<uint64_t>(kDefaultMaxMb) << 20;  // per file
  std::vector<double> skewUs;  // DISTRUN_TRACE_CLOCK_SKEW_US: microseconds per rank
  bool on() const { return !folder.empty(); }
  // The skew of `rank` (0 for a rank the list does not reach, or -1).
  double skewOf(int rank) const;
};

// Reads the DISTRUN_TRACE* variables of `env`. An empty DISTRUN_TRACE is
// off, and the others are then not read. Throws UsageError (exit 64)
// naming the variable, its value and its flag for a malformed value.
TraceConfig readTraceConfig(const Environment& env);

// "A:B", 1 <= A <= B; UsageError "<what>: expected ..." otherwise (`what`:
// "--trace-steps 5:2", "DISTRUN_TRACE_STEPS=5:2 (--trace-steps)").
StepWindow parseStepWindow(std::string_view text, std::string_view what);
// Whole megabytes, at least 1, as bytes; UsageError "<what>: expected ...".
uint64_t parseMaxMb(std::string_view text, std::string_view what);

// Creates `folder` with its parents and checks that this user can create
// a file in it. Throws IoError (exit 74): "<what> DIR: cannot ...: REASON"
// (`what`: "DISTRUN_TRACE (--trace)").
void prepareFolder(const std::string& folder, std::string_view what);

// The name every message about the trace folder gives it.
inline constexpr std::string_view kFolderName = "DISTRUN_TRACE (--trace)";

}  // namespace distrun::trace
