#pragma once

// A Python worker's PyTorch profiler export, torch-rank<R>.json
// (docs/observability.md, "Python jobs"): either what
// torch.autograd.profiler.profile().export_chrome_trace writes, a JSON list
// of events whose ts count microseconds from the profiler's start, or the
// object {"traceEvents": [...], "distrunClockStartUs": ...,
// "distrunRealtimeStartUs": ..., "distrunHost": ...} that says when that
// start was on the host's CLOCK_MONOTONIC and real-time clock.
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace distrun::trace_merge {

// What a PyTorch export holds besides its events.
struct TorchExport {
  bool objectForm = false;
  std::optional<double> clockStartUs;                        // distrunClockStartUs
  std::optional<double> realtimeStartUs;                     // distrunRealtimeStartUs
  std::string host;                                          // distrunHost; empty when absent
  uint64_t events = 0;                                       // kept: phases X, i (or I) and C
  uint64_t skipped = 0;                                      // of other phases (flows, metadata)
  double firstTs = std::numeric_limits<double>::infinity();  // from the profiler's start
  // Both clock fields are there: the export can be placed exactly.
  bool clocked() const { return clockStartUs && realtimeStartUs; }
};

// A collective in a PyTorch export: an X event of the process group's
// backend, "gloo:all_reduce", "nccl:broadcast", ... (c10d records them).
bool isTorchCollective(const nlohmann::json& event);

// Reads `path` event by event (one event in memory at a time), calling
// `onEvent` with each kept event: checked ("name" a string, "ts" a number,
// "dur" a number >= 0 for X), "I" turned into "i". `onEvent` may change
// the event. Throws IoError (74) when the file cannot be read, DataError
// (65) naming the file (and the event's number, from 1) when it is not an
// export or an event is malformed.
TorchExport readTorchExport(const std::string& path,
                            const std::function<void(nlohmann::json&)>& onEvent);

}  // namespace distrun::trace_merge
