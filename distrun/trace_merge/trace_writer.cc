#include "distrun/trace_merge/trace_writer.h"

#include <cmath>

namespace distrun::trace_merge {

namespace {

nlohmann::json metadata(const char* name, int pid, int tid, nlohmann::json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

}  // namespace

TraceWriter::TraceWriter(std::ostream& out) : out_(out) { out_ << "{\"traceEvents\":["; }

void TraceWriter::write(const nlohmann::json& event) {
  out_ << (written_ == 0 ? "\n" : ",\n") << event.dump();
  ++written_;
}

void TraceWriter::finish(const nlohmann::json& otherData) {
  out_ << "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":" << otherData.dump(1) << "}\n";
}

void ProcessTable::addProcess(int pid, const std::string& name, int sortIndex) {
  processes_[pid] = Named{name, sortIndex};
}

int ProcessTable::threadId(int pid, const std::string& name, int sortIndex) {
  auto [it, inserted] = threadIds_.try_emplace({pid, name}, 0);
  if (inserted) {
    it->second = ++threadCount_[pid];
    threads_[{pid, it->second}] = Named{name, sortIndex};
  }
  return it->second;
}

void ProcessTable::writeMetadata(TraceWriter& writer) const {
  for (const auto& [pid, p] : processes_) {
    writer.write(metadata("process_name", pid, 0, {{"name", p.name}}));
    writer.write(metadata("process_sort_index", pid, 0, {{"sort_index", p.sortIndex}}));
  }
  for (const auto& [ids, t] : threads_) {
    writer.write(metadata("thread_name", ids.first, ids.second, {{"name", t.name}}));
    writer.write(
        metadata("thread_sort_index", ids.first, ids.second, {{"sort_index", t.sortIndex}}));
  }
}

double roundToNanoseconds(double us) { return std::round(us * 1000.0) / 1000.0; }

}  // namespace distrun::trace_merge
