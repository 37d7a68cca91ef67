#include "distrun/trace_merge/merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "distrun/common/atomic_file.h"
#include "distrun/common/writable_file.h"
#include "distrun/config.h"
#include "distrun/trace_merge/jsonl_reader.h"
#include "distrun/trace_merge/merge_plan.h"
#include "distrun/trace_merge/trace_writer.h"

namespace distrun::trace_merge {

namespace {

using nlohmann::json;

// The order of a process's threads: a part's compute, data, comm,
// launcher; PyTorch's after the first part's; names unknown last.
int threadOrder(const std::string& thread) {
  static const std::map<std::string, int> kOrder = {
      {"compute", 0}, {"data", 1}, {"comm", 2}, {"launcher", 3}};
  auto it = kOrder.find(thread);
  return it == kOrder.end() ? 10 : it->second;
}

// " (restart 1)" after the thread names of a later part.
std::string partSuffix(const TracePart& part, size_t i) {
  if (part.header.restart > 0) return fmt::format(" (restart {})", part.header.restart);
  return i == 0 ? "" : fmt::format(" (start {})", i + 1);
}

// The ranks with a file: a rank file or a PyTorch export.
std::set<int> ranksOf(const FolderScan& scan) {
  std::set<int> ranks;
  for (const ScannedFile& f : scan.files) {
    if (f.source.kind == SourceKind::kWorker) ranks.insert(f.source.index);
  }
  for (const ScannedTorch& t : scan.torch) ranks.insert(t.source.index);
  return ranks;
}

// The thread of a PyTorch event: "torch" for the export's first thread,
// "torch (thread 7)" for others; `threads` maps PyTorch's tids to them.
const std::string& torchThread(std::map<std::string, std::string>& threads, const json& event) {
  const json tid = event.value("tid", json());
  const std::string key = tid.is_string() ? tid.get<std::string>() : tid.dump();
  auto [it, inserted] = threads.try_emplace(key, "torch");
  if (inserted && threads.size() > 1) it->second = fmt::format("torch (thread {})", key);
  return it->second;
}

// The second pass: every event again, placed and written.
class MergeWriter {
 public:
  MergeWriter(MergePlan& plan, std::ostream& out) : plan_(plan), writer_(out) {}
  MergeReport run();

 private:
  void writeFile(size_t f);
  void writePart(json& event, const ScannedFile& file, size_t part, double shift, int pid);
  void writeFlows(const json& event, const CollectiveKey& key, int rank, int pid, int tid);
  void writeTorch(size_t i);
  void nameProcesses();
  json otherData() const;

  void place(json& event, int pid, int tid, double referenceTs) {
    event["pid"] = pid;
    event["tid"] = tid;
    event["ts"] = roundToNanoseconds(referenceTs - plan_.timeZero);
  }

  MergePlan& plan_;
  TraceWriter writer_;
  ProcessTable processes_;
  uint64_t events_ = 0;
};

void MergeWriter::writeFile(size_t f) {
  const ScannedFile& file = plan_.scan.files[f];
  const bool agent = file.source.kind == SourceKind::kAgent;
  const int pid = agent ? pidOfAgent(plan_, file.source.index) : pidOfRank(file.source.index);
  JsonlReader reader(file.source.path);
  json line;
  size_t part = 0;
  // Only the lines the scan checked: a running job may have added more.
  for (size_t headers = 0; reader.next(line) && reader.lineNumber() <= file.lastLine;) {
    const LineKind kind = classifyLine(line, reader.where());
    if (kind == LineKind::kHeader) part = headers++;
    if (kind != LineKind::kEvent) continue;
    writePart(line, file, part, plan_.parts[f][part].shiftUs, pid);
  }
}

void MergeWriter::writePart(json& event, const ScannedFile& file, size_t part, double shift,
                            int pid) {
  const std::string thread = threadOf(event);
  const int tid = processes_.threadId(pid, thread + partSuffix(file.parts[part], part),
                                      static_cast<int>(part) * 100 + threadOrder(thread));
  place(event, pid, tid, event["ts"].get<double>() + shift);
  writer_.write(event);
  ++events_;
  if (file.source.kind != SourceKind::kWorker) return;
  if (auto id = collectiveOf(event)) {
    const CollectiveKey key{file.parts[part].header.restart, id->comm, id->seq};
    writeFlows(event, key, file.source.index, pid, tid);
  }
}

// Where a flow end goes: a nanosecond inside `event` (placed), so that a
// viewer that binds it to the slice open at that time finds the event even
// when it handles the flow before the slice starting at the same time.
double insideOf(const json& event) {
  const double dur = event.contains("dur") ? event["dur"].get<double>() : 0.0;
  return roundToNanoseconds(event["ts"].get<double>() + std::min(dur / 2, 0.001));
}

void MergeWriter::writeFlows(const json& event, const CollectiveKey& key, int rank, int pid,
                             int tid) {
  for (const FlowEnd& end : plan_.scan.collectives.flowsFor(key, rank)) {
    json flow = {{"name", flowName(key)}, {"cat", "comm"}, {"ph", end.start ? "s" : "f"},
                 {"id", end.id},          {"pid", pid},    {"tid", tid},
                 {"ts", insideOf(event)}};
    if (!end.start) flow["bp"] = "e";
    writer_.write(flow);
  }
}

void MergeWriter::writeTorch(size_t i) {
  const ScannedTorch& t = plan_.scan.torch[i];
  const double start =
      t.info.clocked() ? *t.info.clockStartUs + plan_.torch[i].shiftUs : plan_.torchAnchors[i];
  const int pid = pidOfRank(t.source.index);
  std::map<std::string, std::string> threads;  // PyTorch's tid -> thread name
  int64_t seq = 0;
  readTorchExport(t.source.path, [&](json& event) {
    const std::string& thread = torchThread(threads, event);
    const int tid = processes_.threadId(pid, thread, 50 + static_cast<int>(threads.size()));
    if (!event.contains("cat")) event["cat"] = "torch";
    place(event, pid, tid, start + event["ts"].get<double>());
    writer_.write(event);
    ++events_;
    if (isTorchCollective(event)) {
      writeFlows(event, {0, kTorchComm, seq++}, t.source.index, pid, tid);
    }
  });
}

void MergeWriter::nameProcesses() {
  for (int rank : ranksOf(plan_.scan)) {
    processes_.addProcess(pidOfRank(rank), rankProcessName(plan_, rank), rank);
  }
  for (const ScannedFile& f : plan_.scan.files) {
    if (f.source.kind != SourceKind::kAgent) continue;
    processes_.addProcess(pidOfAgent(plan_, f.source.index), agentProcessName(f),
                          plan_.maxRank + 1 + f.source.index);
  }
}

json MergeWriter::otherData() const {
  json files = json::array();
  for (const ScannedFile& f : plan_.scan.files) files.push_back(f.source.path);
  for (const ScannedTorch& t : plan_.scan.torch) files.push_back(t.source.path);
  return {{"merged_by", std::string("distrun trace merge ") + DISTRUN_VERSION},
          {"files", files},
          {"time_zero", "the job's first event, on rank 0's clock"},
          {"clocks", plan_.clocks},
          {"flows", {{"pairs", plan_.flows.pairs}, {"missing_a_side", plan_.flows.missing}}},
          {"notes", plan_.notes}};
}

MergeReport MergeWriter::run() {
  for (size_t f = 0; f < plan_.scan.files.size(); ++f) writeFile(f);
  for (size_t i = 0; i < plan_.scan.torch.size(); ++i) writeTorch(i);
  nameProcesses();
  processes_.writeMetadata(writer_);
  writer_.finish(otherData());
  MergeReport report;
  report.ranks = static_cast<int>(ranksOf(plan_.scan).size());
  for (const ScannedFile& f : plan_.scan.files) {
    report.launchers += f.source.kind == SourceKind::kAgent ? 1 : 0;
  }
  report.torchExports = static_cast<int>(plan_.scan.torch.size());
  report.events = events_;
  report.flowPairs = plan_.flows.pairs;
  report.flowMissing = plan_.flows.missing;
  report.notes = plan_.notes;
  return report;
}

MergeReport mergeSources(const std::vector<TraceSource>& sources, std::ostream& out) {
  MergePlan plan = planMerge(scanFolder(sources));
  return MergeWriter(plan, out).run();
}

}  // namespace

MergeReport mergeTraces(const std::string& folder, std::ostream& out) {
  return mergeSources(findTraceFiles(folder), out);
}

MergeReport mergeTraceFolder(const std::string& folder, const std::string& output,
                             const std::string& outputFlag) {
  const std::vector<TraceSource> sources = findTraceFiles(folder);
  checkFileWritable(output, outputFlag, 0);
  MergePlan plan = planMerge(scanFolder(sources));
  AtomicOutput file(output, outputFlag);
  MergeReport report = MergeWriter(plan, file.stream()).run();
  file.commit();
  report.output = output;
  return report;
}

std::string defaultOutputFor(const std::string& folder) {
  return (std::filesystem::path(folder) / "trace.json").string();
}

std::string formatSummary(const MergeReport& r) {
  auto plural = [](uint64_t n, const char* one, const char* many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
  };
  return fmt::format(
      "wrote {}: {}, {}, {}, {}; {} linked, {} with a side missing", r.output,
      plural(static_cast<uint64_t>(r.ranks), "rank", "ranks"),
      plural(static_cast<uint64_t>(r.launchers), "launcher", "launchers"),
      plural(static_cast<uint64_t>(r.torchExports), "PyTorch export", "PyTorch exports"),
      plural(r.events, "event", "events"),
      plural(r.flowPairs, "collective pair", "collective pairs"), r.flowMissing);
}

}  // namespace distrun::trace_merge
