#pragma once

// The files of a trace folder (docs/observability.md, "The trace files").
#include <string>
#include <vector>

namespace distrun::trace_merge {

enum class SourceKind { kWorker, kAgent, kTorch };

// One file to merge.
struct TraceSource {
  SourceKind kind = SourceKind::kWorker;
  int index = 0;     // R of rank<R>.jsonl and torch-rank<R>.json, N of agent<N>.jsonl
  std::string path;  // the folder as given, joined with the file's name
};

// The trace files in `folder`: rank<R>.jsonl by rank, then agent<N>.jsonl
// by node, then torch-rank<R>.json by rank. Other files are left alone
// (the merged trace.json among them).
//
// Throws: the folder is missing or not a folder (kNoInput, 66), or holds
// none of those files (kNoInput); it cannot be listed (IoError, 74).
std::vector<TraceSource> findTraceFiles(const std::string& folder);

// "rank 1", "launcher node 0", "torch rank 1": a source in messages.
std::string labelOf(const TraceSource& source);

}  // namespace distrun::trace_merge
