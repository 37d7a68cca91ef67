#pragma once

// The lines of a recorded trace file (docs/observability.md, "The trace
// files"): the header that starts each process's part, the clock line, the
// size cap's line and the events. Each parse function takes one line's JSON
// object and `where` ("traces/rank1.jsonl:17") for its messages, and throws
// DataError (exit 65) naming `where`, the field and what was expected.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace distrun::trace_merge {

// What one line of a trace file is.
enum class LineKind { kHeader, kClockOffset, kCapped, kEvent };

// The first line of a process's part: who wrote what follows, and one
// instant read on both of its host's clocks.
struct TraceHeader {
  std::string process;  // "worker" or "agent"
  int rank = -1;        // -1 for an agent
  int worldSize = 0;
  int localRank = -1;
  int nodeRank = -1;
  std::string host;
  int64_t pid = 0;
  int restart = 0;
  double monotonicUs = 0;  // CLOCK_MONOTONIC, microseconds
  double realtimeUs = 0;   // CLOCK_REALTIME, microseconds since 1970
};

// The offset measured to rank 0: rank 0's clock = this process's + offsetUs.
struct ClockOffset {
  int toRank = 0;
  double offsetUs = 0;
  double rttUs = 0;
};

// The trace format version this merge reads.
inline constexpr int kTraceVersion = 1;

// Which kind `line` is; DataError for an object that is none of them.
LineKind classifyLine(const nlohmann::json& line, const std::string& where);

TraceHeader parseHeader(const nlohmann::json& line, const std::string& where);
ClockOffset parseClockOffset(const nlohmann::json& line, const std::string& where);
// The cap in bytes that a capped file reached.
uint64_t parseCappedBytes(const nlohmann::json& line, const std::string& where);

// Checks an event line: "name" a string, "ph" one of X, i, C, "ts" a
// number, "dur" a number >= 0 for X, "tid" a string when present, "args"
// an object when present (of numbers for C).
void checkEvent(const nlohmann::json& event, const std::string& where);

// The thread an event belongs to: its "tid", "compute" when it has none.
std::string threadOf(const nlohmann::json& event);

// A collective's identity across ranks: (args.comm, args.seq) of an event
// of category "comm"; none for any other event.
struct CollectiveId {
  int64_t comm = 0;
  int64_t seq = 0;
};
std::optional<CollectiveId> collectiveOf(const nlohmann::json& event);

// The global rank a launcher event is about: args.rank of the agent's
// "worker_started" events (the anchor of a bare PyTorch export).
inline constexpr const char* kWorkerStarted = "worker_started";
std::optional<int> startedRankOf(const nlohmann::json& event);

}  // namespace distrun::trace_merge
