#pragma once

// `distrun trace merge DIR -o FILE`: a trace folder's files, one per
// process, merged into one Chrome/Perfetto trace of the job
// (docs/observability.md, "Merging: one trace for the job").
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace distrun::trace_merge {

// What a merge wrote, for the command's summary.
struct MergeReport {
  std::string output;  // the file written; empty for mergeTraces
  int ranks = 0;       // processes of ranks (from rank files and PyTorch exports)
  int launchers = 0;   // processes of agents
  int torchExports = 0;
  uint64_t events = 0;             // events taken from the files
  uint64_t flowPairs = 0;          // (rank 0, rank R) pairs of a collective linked by a flow
  uint64_t flowMissing = 0;        // pairs with a side missing (a rank killed, a capped file)
  std::vector<std::string> notes;  // one line each: repairs, caps, clock fallbacks
};

// Reads every trace file in `folder` (rank<R>.jsonl, agent<N>.jsonl,
// torch-rank<R>.json) twice, line by line, and writes the merged trace to
// `out`. Nothing is written when an input is wrong. Throws:
//   Error with kNoInput (66): the folder is missing, not a folder, or holds
//     no trace file;
//   IoError (74): a file cannot be listed, opened or read;
//   DataError (65): a line other than the last is not JSON, or a line or
//     header is malformed, naming "FILE:LINE" and what was expected.
MergeReport mergeTraces(const std::string& folder, std::ostream& out);

// The same into the file `output`, written under a temporary name and
// renamed into place once whole. `outputFlag` names it in errors ("-o").
// Also throws IoError (74) when `output` cannot be written: found before
// the inputs are read (writable_file.h), or while writing.
MergeReport mergeTraceFolder(const std::string& folder, const std::string& output,
                             const std::string& outputFlag);

// FOLDER/trace.json: where the merged trace goes without -o.
std::string defaultOutputFor(const std::string& folder);

// "wrote t.json: 2 ranks, 1 launcher, 0 PyTorch exports, 5230 events; 96
// collective pairs linked, 0 with a side missing".
std::string formatSummary(const MergeReport& report);

}  // namespace distrun::trace_merge
