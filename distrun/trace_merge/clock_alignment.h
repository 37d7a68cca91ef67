#pragma once

// Placing every traced process on one clock: rank 0's CLOCK_MONOTONIC
// (docs/observability.md, "Merging: one trace for the job").
#include <optional>
#include <string>
#include <vector>

#include "distrun/trace_merge/trace_folder.h"
#include "distrun/trace_merge/trace_lines.h"

namespace distrun::trace_merge {

// One process start to place: a worker's or an agent's part of a trace
// file, or a PyTorch export.
struct ClockSource {
  std::string label;  // "rank 1", "launcher node 0", "torch rank 1": otherData and notes
  SourceKind kind = SourceKind::kWorker;
  int rank = -1;      // workers and PyTorch exports
  int nodeRank = -1;  // agents
  int round = 0;      // the header's "restart"
  std::string host;   // empty when unknown
  std::optional<ClockOffset> measured;
  // One instant on the process's clock (monotonicUs) and on its host's
  // real-time clock (realtimeUs); none for a bare PyTorch export.
  std::optional<TraceHeader> pair;
};

// Where a source lands: reference time = its own time + shiftUs.
struct Placement {
  double shiftUs = 0;
  bool placed = false;    // false: no way to place it (a bare PyTorch export)
  bool realtime = false;  // placed by the real-time clocks
  std::string method;     // how, in words, for otherData
};

// Places `sources` (in any order; the result is in the same order).
//
// The reference is rank 0's clock (its first part), else, with no rank 0
// file, the first agent's, else rank 0's PyTorch export's, else the
// real-time clock itself. CLOCK_MONOTONIC
// is one clock per host, so a process takes, in this order: rank 0's own
// clock when it is on a host of rank 0's; its measured offset (to the rank
// 0 of its restart round); the offset measured by another process on its
// host (an agent, a Python rank beside a C++ one); else its host's real-time
// clock against the reference's ("realtime"). Measured offsets count only
// when rank 0's file is there (they are to its clock). Adds to `notes` one
// line naming what was placed by real time, and one when workers traced
// but rank 0's file is missing, or nothing could be the reference.
std::vector<Placement> alignClocks(const std::vector<ClockSource>& sources,
                                   std::vector<std::string>& notes);

}  // namespace distrun::trace_merge
