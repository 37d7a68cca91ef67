#pragma once

// Writing the merged trace: the JSON object form of the Chrome trace event
// format, which Perfetto (ui.perfetto.dev) and chrome://tracing load, and
// share/trace.schema.json describes.
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace distrun::trace_merge {

// The text of one trace, written to `out` event by event, so that no more
// than one event is held. Not thread-safe; the stream's errors are the
// caller's to check.
class TraceWriter {
 public:
  // Writes the opening: {"traceEvents":[
  explicit TraceWriter(std::ostream& out);
  void write(const nlohmann::json& event);
  // Closes the list and adds "displayTimeUnit":"ms" and `otherData`.
  void finish(const nlohmann::json& otherData);
  uint64_t written() const { return written_; }

 private:
  std::ostream& out_;
  uint64_t written_ = 0;
};

// The processes and threads of the merged trace, named by metadata events
// ("M": process_name, process_sort_index, thread_name, thread_sort_index).
// Thread ids count from 1 in each process (Perfetto treats 0 as the idle
// task's). Not thread-safe.
class ProcessTable {
 public:
  void addProcess(int pid, const std::string& name, int sortIndex);
  // The tid of the thread `name` of process `pid`, made on first use;
  // `sortIndex` orders it among the process's threads.
  int threadId(int pid, const std::string& name, int sortIndex);
  // One metadata event per name and sort index, processes first.
  void writeMetadata(TraceWriter& writer) const;

 private:
  struct Named {
    std::string name;
    int sortIndex = 0;
  };
  std::map<int, Named> processes_;
  std::map<std::pair<int, std::string>, int> threadIds_;
  std::map<std::pair<int, int>, Named> threads_;  // (pid, tid)
  std::map<int, int> threadCount_;
};

// `us` rounded to the nanosecond: what the merged trace's times hold.
double roundToNanoseconds(double us);

}  // namespace distrun::trace_merge
