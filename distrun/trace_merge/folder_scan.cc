#include "distrun/trace_merge/folder_scan.h"

#include <algorithm>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/writable_file.h"
#include "distrun/trace_merge/jsonl_reader.h"

namespace distrun::trace_merge {

namespace {

void checkHeaderMatchesFile(const TraceHeader& h, const TraceSource& s, const std::string& where) {
  if (s.kind == SourceKind::kWorker && (h.process != "worker" || h.rank != s.index)) {
    throw DataError(fmt::format("{}: a header of {} {} in the file of rank {}: expected rank {}'s",
                                where, h.process, h.rank, s.index, s.index));
  }
  if (s.kind == SourceKind::kAgent &&
      (h.process != "agent" || (h.nodeRank >= 0 && h.nodeRank != s.index))) {
    throw DataError(fmt::format(
        "{}: a header of {} {} (node {}) in the file of the agent of node {}: expected an agent's "
        "header",
        where, h.process, h.rank, h.nodeRank, s.index));
  }
}

void takeEvent(const nlohmann::json& line, const std::string& where, const TraceSource& s,
               TracePart& part, CollectiveIndex& collectives) {
  checkEvent(line, where);
  ++part.events;
  const double ts = line["ts"].get<double>();
  part.firstTs = std::min(part.firstTs, ts);
  if (s.kind == SourceKind::kWorker) {
    if (auto id = collectiveOf(line)) {
      collectives.add({part.header.restart, id->comm, id->seq}, s.index);
    }
  } else if (auto rank = startedRankOf(line)) {
    part.starts.push_back({*rank, ts});
  }
}

void takeLine(const nlohmann::json& line, const std::string& where, ScannedFile& file,
              CollectiveIndex& collectives) {
  const LineKind kind = classifyLine(line, where);
  if (kind == LineKind::kHeader) {
    file.parts.emplace_back().header = parseHeader(line, where);
    checkHeaderMatchesFile(file.parts.back().header, file.source, where);
    return;
  }
  if (file.parts.empty()) {
    throw DataError(fmt::format(
        "{}: expected the header line first ({{\"trace\":\"distrun\",\"version\":{},...}})", where,
        kTraceVersion));
  }
  TracePart& part = file.parts.back();
  if (kind == LineKind::kClockOffset) part.measured = parseClockOffset(line, where);
  if (kind == LineKind::kCapped) part.cappedBytes = parseCappedBytes(line, where);
  if (kind == LineKind::kEvent) takeEvent(line, where, file.source, part, collectives);
}

void noteFile(const ScannedFile& file, std::vector<std::string>& notes) {
  if (file.droppedLine != 0) {
    notes.push_back(fmt::format(
        "{}: dropped line {}, which is not whole (the process was killed while writing it?)",
        file.source.path, file.droppedLine));
  }
  if (file.parts.empty() && file.droppedLine == 0) {
    notes.push_back(fmt::format("{}: empty, skipped", file.source.path));
  }
  for (const TracePart& part : file.parts) {
    if (!part.cappedBytes) continue;
    notes.push_back(
        fmt::format("{}: capped at {} (the trace's size cap): later events of {} were not recorded",
                    file.source.path, mebibytes(*part.cappedBytes), labelOf(file.source)));
  }
}

ScannedFile scanFile(const TraceSource& source, CollectiveIndex& collectives) {
  ScannedFile file;
  file.source = source;
  JsonlReader reader(source.path);
  nlohmann::json line;
  while (reader.next(line)) {
    takeLine(line, reader.where(), file, collectives);
    file.lastLine = reader.lineNumber();
  }
  if (reader.droppedLastLine()) file.droppedLine = reader.lineNumber();
  return file;
}

TorchExport scanTorch(const TraceSource& source, CollectiveIndex& collectives) {
  int64_t seq = 0;
  return readTorchExport(source.path, [&](const nlohmann::json& event) {
    if (isTorchCollective(event)) collectives.add({0, kTorchComm, seq++}, source.index);
  });
}

}  // namespace

FolderScan scanFolder(const std::vector<TraceSource>& sources) {
  FolderScan scan;
  for (const TraceSource& source : sources) {
    if (source.kind == SourceKind::kTorch) {
      scan.torch.push_back({source, scanTorch(source, scan.collectives)});
      continue;
    }
    scan.files.push_back(scanFile(source, scan.collectives));
    noteFile(scan.files.back(), scan.notes);
  }
  return scan;
}

}  // namespace distrun::trace_merge
