#pragma once

// The lines of a trace file (docs/observability.md, "The trace files"):
// one JSON object per line, without the newline. Times are microseconds
// of the trace clock (clock.h).
#include <cstdint>
#include <string>
#include <string_view>

#include "distrun/trace/args.h"

namespace distrun::trace {

// The thread an event belongs to in the merged view (its "tid").
enum class Thread { kCompute, kData, kComm, kLauncher };
std::string_view nameOf(Thread thread);

// A process's first line.
struct Header {
  std::string process = "worker";  // "worker" or "agent"
  int rank = -1;                   // global rank; -1 for an agent
  int worldSize = 0;
  int localRank = -1;
  int nodeRank = -1;
  std::string host;
  long pid = 0;
  int restart = 0;  // TORCHELASTIC_RESTART_COUNT
  // One instant read on both clocks.
  double monotonicUs = 0;
  double realtimeUs = 0;
};

std::string headerLine(const Header& header);
// A span ("ph":"X") from `startUs`, `durationUs` long.
std::string spanLine(std::string_view name, std::string_view category, Thread thread,
                     double startUs, double durationUs, const Args& args);
// An instant ("ph":"i").
std::string instantLine(std::string_view name, std::string_view category, Thread thread,
                        double atUs, const Args& args);
// The offset to rank 0's clock measured by ping-pong (rank 0's clock =
// this one's + offsetUs) and the round trip of the best exchange.
std::string clockOffsetLine(double offsetUs, double rttUs);
// The last line of a file that reached its size cap of `bytes`.
std::string cappedLine(uint64_t bytes);

}  // namespace distrun::trace
