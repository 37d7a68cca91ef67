#pragma once

// A Chrome trace (the JSON object form, {"traceEvents": [...]}, that
// `distrun trace merge` writes, or a bare array of events) as lanes of
// spans to draw: one lane per (process, thread), named by the trace's
// "M" events process_name and thread_name, ordered by their sort_index
// metadata, then by pid and tid. Only complete events ("ph":"X") are
// spans; instants, counters, flows and other phases are left out.
#include <string>
#include <vector>

namespace distrun::plot {

struct Span {
  size_t lane = 0;     // index into Timeline::lanes
  double startMs = 0;  // milliseconds from the trace's first span
  double endMs = 0;
  std::string name;
  std::string category;  // "cat"; "" when the event has none
};

struct Timeline {
  std::string path;                // the file it was read from
  std::vector<std::string> lanes;  // "rank 0 (node1) / compute": process, then thread
  std::vector<Span> spans;         // ordered by lane, then start
  double endMs = 0;                // the last span's end
};

// Reads the trace at `path`. Throws Error kNoInput (66) when it is missing,
// IoError (74) when unreadable, DataError (65) naming the file, the event
// and what was expected when it is not a Chrome trace, an "X" event lacks
// a number, or it holds no "X" event at all.
Timeline readTimeline(const std::string& path);

// The same, from the file's text (`path` names it in errors).
Timeline parseTimeline(const std::string& path, const std::string& json);

// The spans of `timeline` that overlap [fromMs, toMs], cut to it, on the
// lanes that keep a span (none: no span overlaps).
Timeline window(const Timeline& timeline, double fromMs, double toMs);

}  // namespace distrun::plot
