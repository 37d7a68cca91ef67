#pragma once

// The first of the merge's two passes: every line of every file read and
// checked, and what the second pass needs kept (never the events).
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "distrun/trace_merge/collective_index.h"
#include "distrun/trace_merge/torch_export.h"
#include "distrun/trace_merge/trace_folder.h"
#include "distrun/trace_merge/trace_lines.h"

namespace distrun::trace_merge {

// An agent's "worker_started" event: when (on the agent's clock) it
// started global rank `rank`.
struct WorkerStart {
  int rank = 0;
  double ts = 0;
};

// One start of a process in a file: its header and the lines up to the
// next header (a restarted worker appends a part to its rank's file).
struct TracePart {
  TraceHeader header;
  std::optional<ClockOffset> measured;
  std::optional<uint64_t> cappedBytes;
  uint64_t events = 0;
  double firstTs = std::numeric_limits<double>::infinity();  // on its own clock
  std::vector<WorkerStart> starts;                           // agents only
};

// A rank<R>.jsonl or agent<N>.jsonl file, scanned.
struct ScannedFile {
  TraceSource source;
  std::vector<TracePart> parts;
  size_t lastLine = 0;     // the last line the scan took; the writing pass stops there
  size_t droppedLine = 0;  // the last line, dropped as not whole; 0 when none
};

// A torch-rank<R>.json file, scanned.
struct ScannedTorch {
  TraceSource source;
  TorchExport info;
};

struct FolderScan {
  std::vector<ScannedFile> files;  // workers then agents, as findTraceFiles sorts them
  std::vector<ScannedTorch> torch;
  CollectiveIndex collectives;
  std::vector<std::string> notes;  // dropped lines, capped and empty files
};

// Reads every file of `sources` (findTraceFiles). Throws what JsonlReader,
// the trace_lines parsers and readTorchExport throw, and DataError when a
// file does not start with its header or a header does not match the
// file's name (rank1.jsonl holding rank 3's header).
FolderScan scanFolder(const std::vector<TraceSource>& sources);

}  // namespace distrun::trace_merge
