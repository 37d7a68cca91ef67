#pragma once

// Trace folders for the merge's tests: files written line by line as the
// recorder writes them (docs/observability.md, "The trace files"), and the
// merged trace read back.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/trace_merge/merge.h"

namespace distrun::trace_merge::testing {

// Rank 0's clocks at the instant its header was written.
inline constexpr double kMono = 1'000'000.0;
inline constexpr double kReal = 1'795'529'098'000'000.0;

// A fresh folder under the test's temporary directory, removed at the end.
class TraceFolder {
 public:
  TraceFolder() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ::testing::TempDir() + "trace_merge_" + std::to_string(::getpid()) + "_" +
            test->test_suite_name() + "_" + test->name();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TraceFolder() { std::filesystem::remove_all(path_); }
  TraceFolder(const TraceFolder&) = delete;
  TraceFolder& operator=(const TraceFolder&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  // Appends `lines`, each followed by a newline, to the file `name`.
  void append(const std::string& name, const std::vector<nlohmann::json>& lines) const {
    std::ofstream out(file(name), std::ios::app);
    for (const nlohmann::json& line : lines) out << line.dump() << "\n";
  }
  // Appends `text` as it is (a line cut short, a broken line).
  void appendText(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::app) << text;
  }

 private:
  std::string path_;
};

// A worker's header line: rank `rank` on `host`, whose clocks read `mono`
// and `real` at one instant.
inline nlohmann::json workerHeader(int rank, const std::string& host, double mono, double real,
                                   int restart = 0) {
  return {{"trace", "distrun"},
          {"version", 1},
          {"rank", rank},
          {"world_size", 2},
          {"local_rank", 0},
          {"node_rank", rank},
          {"host", host},
          {"pid", 4242 + rank},
          {"process", "worker"},
          {"restart", restart},
          {"clock", "monotonic_us"},
          {"monotonic_us", mono},
          {"realtime_us", real}};
}

inline nlohmann::json agentHeader(int node, const std::string& host, double mono, double real) {
  nlohmann::json h = workerHeader(-1, host, mono, real);
  h["process"] = "agent";
  h["node_rank"] = node;
  h["local_rank"] = -1;
  return h;
}

inline nlohmann::json clockLine(double offsetUs, double rttUs) {
  return {{"clock_offset", {{"to_rank", 0}, {"offset_us", offsetUs}, {"rtt_us", rttUs}}}};
}

inline nlohmann::json span(const std::string& name, double ts, double dur,
                           const std::string& tid = "compute") {
  return {{"name", name}, {"cat", tid == "comm" ? "comm" : "train"},
          {"ph", "X"},    {"ts", ts},
          {"dur", dur},   {"tid", tid}};
}

// The allreduce of collective (comm, seq).
inline nlohmann::json allreduce(int64_t comm, int64_t seq, double ts, double dur) {
  nlohmann::json e = span("allreduce", ts, dur, "comm");
  e["args"] = {{"comm", comm},    {"seq", seq},  {"bytes", 4096},
               {"type", "float"}, {"op", "sum"}, {"algorithm", "ring"}};
  return e;
}

// The launcher's "worker_started" event for global rank `rank`.
inline nlohmann::json workerStarted(int rank, double ts) {
  return {{"name", "worker_started"},
          {"cat", "launcher"},
          {"ph", "i"},
          {"ts", ts},
          {"tid", "launcher"},
          {"args", {{"rank", rank}, {"local_rank", rank}}}};
}

inline nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A merged trace, parsed, with what the tests look up.
struct Merged {
  nlohmann::json trace;
  MergeReport report;

  const nlohmann::json& events() const { return trace["traceEvents"]; }
  // The events named `name`, metadata left out.
  std::vector<nlohmann::json> named(const std::string& name) const {
    std::vector<nlohmann::json> found;
    for (const nlohmann::json& e : events()) {
      if (e["name"] == name && e["ph"] != "M") found.push_back(e);
    }
    return found;
  }
  std::vector<nlohmann::json> phase(const std::string& ph) const {
    std::vector<nlohmann::json> found;
    for (const nlohmann::json& e : events()) {
      if (e["ph"] == ph) found.push_back(e);
    }
    return found;
  }
  // The value of a metadata event ("process_name", ...) by (pid, tid).
  std::map<std::pair<int, int>, nlohmann::json> metadata(const std::string& name) const {
    std::map<std::pair<int, int>, nlohmann::json> found;
    for (const nlohmann::json& e : phase("M")) {
      if (e["name"] == name) found[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"];
    }
    return found;
  }
  std::string processName(int pid) const { return metadata("process_name").at({pid, 0})["name"]; }
  std::string threadName(const nlohmann::json& event) const {
    return metadata("thread_name").at({event["pid"].get<int>(), event["tid"].get<int>()})["name"];
  }
};

// Merges `folder` as `distrun trace merge` does, and reads the result back.
inline Merged merge(const TraceFolder& folder) {
  std::ostringstream out;
  Merged m;
  m.report = mergeTraces(folder.path(), out);
  m.trace = nlohmann::json::parse(out.str());
  return m;
}

}  // namespace distrun::trace_merge::testing
