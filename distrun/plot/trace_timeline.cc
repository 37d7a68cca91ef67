#include "distrun/plot/trace_timeline.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distrun/common/error.h"
#include "distrun/plot/input_file.h"

namespace distrun::plot {

namespace {

using Json = nlohmann::json;

// A pid or tid as the trace wrote it: a number or a string.
struct Id {
  bool isNumber = false;
  double value = 0;
  std::string text;

  auto key() const { return std::make_tuple(!isNumber, value, text); }
  bool operator<(const Id& other) const { return key() < other.key(); }
};

Id idOf(const Json& event, const char* field) {
  const auto it = event.find(field);
  if (it == event.end()) return {false, 0, ""};
  if (it->is_number()) return {true, it->get<double>(), it->dump()};
  return {false, 0, it->is_string() ? it->get<std::string>() : it->dump()};
}

using LaneKey = std::pair<Id, Id>;  // (pid, tid)

// What the "M" events say about processes and threads.
struct Metadata {
  std::map<Id, std::string> processNames;
  std::map<Id, double> processOrder;
  std::map<LaneKey, std::string> threadNames;
  std::map<LaneKey, double> threadOrder;
};

struct RawSpan {
  LaneKey lane;
  double ts = 0, dur = 0;
  std::string name, category;
};

std::string stringField(const Json& event, const char* field) {
  const auto it = event.find(field);
  return it != event.end() && it->is_string() ? it->get<std::string>() : "";
}

void readMetadata(const Json& event, Metadata& m) {
  const std::string name = stringField(event, "name");
  const auto args = event.find("args");
  if (args == event.end() || !args->is_object()) return;
  const Id pid = idOf(event, "pid");
  const LaneKey lane{pid, idOf(event, "tid")};
  const std::string label = stringField(*args, "name");
  const auto index = args->find("sort_index");
  const bool hasIndex = index != args->end() && index->is_number();
  if (name == "process_name" && !label.empty()) m.processNames[pid] = label;
  if (name == "thread_name" && !label.empty()) m.threadNames[lane] = label;
  if (name == "process_sort_index" && hasIndex) m.processOrder[pid] = index->get<double>();
  if (name == "thread_sort_index" && hasIndex) m.threadOrder[lane] = index->get<double>();
}

DataError badEvent(const std::string& path, size_t index, const std::string& problem) {
  return DataError(fmt::format(
      "trace {}: event {}: expected a complete event (\"ph\":\"X\") with numbers \"ts\" and "
      "\"dur\" (microseconds, dur at least 0): {}",
      path, index, problem));
}

double numberField(const Json& event, const char* field, const std::string& path, size_t index) {
  const auto it = event.find(field);
  if (it == event.end()) throw badEvent(path, index, fmt::format("it has no \"{}\"", field));
  if (!it->is_number()) {
    throw badEvent(path, index, fmt::format("its \"{}\" is {}", field, it->dump()));
  }
  return it->get<double>();
}

RawSpan readSpan(const Json& event, const std::string& path, size_t index) {
  RawSpan span{{idOf(event, "pid"), idOf(event, "tid")},
               numberField(event, "ts", path, index),
               numberField(event, "dur", path, index),
               stringField(event, "name"),
               stringField(event, "cat")};
  if (span.dur < 0) throw badEvent(path, index, fmt::format("its \"dur\" is {}", span.dur));
  return span;
}

const Json& eventsOf(const Json& doc, const std::string& path) {
  if (doc.is_array()) return doc;
  const auto events = doc.is_object() ? doc.find("traceEvents") : doc.end();
  if (events == doc.end() || !events->is_array()) {
    throw DataError(fmt::format(
        "trace {}: expected a Chrome trace, a JSON object with a \"traceEvents\" array (what "
        "`distrun trace merge` writes)",
        path));
  }
  return *events;
}

}  // namespace

namespace {

std::string laneLabel(const LaneKey& lane, const Metadata& m) {
  const auto process = m.processNames.find(lane.first);
  const auto thread = m.threadNames.find(lane);
  const std::string p =
      process != m.processNames.end() ? process->second : "pid " + lane.first.text;
  const std::string t = thread != m.threadNames.end() ? thread->second : "tid " + lane.second.text;
  return p + " / " + t;
}

double orderOf(const auto& order, const auto& key) {
  const auto it = order.find(key);
  return it == order.end() ? 0 : it->second;
}

// The lanes that hold spans, in drawing order: sort indexes first, then ids.
std::vector<LaneKey> orderedLanes(const std::vector<RawSpan>& spans, const Metadata& m) {
  std::set<LaneKey> distinct;
  for (const RawSpan& s : spans) distinct.insert(s.lane);
  std::vector<LaneKey> lanes(distinct.begin(), distinct.end());
  const auto rank = [&m](const LaneKey& k) {
    return std::make_tuple(orderOf(m.processOrder, k.first), k.first.key(),
                           orderOf(m.threadOrder, k), k.second.key());
  };
  std::sort(lanes.begin(), lanes.end(),
            [&rank](const LaneKey& a, const LaneKey& b) { return rank(a) < rank(b); });
  return lanes;
}

Timeline assemble(const std::string& path, const std::vector<RawSpan>& raw, const Metadata& m) {
  Timeline t;
  t.path = path;
  std::map<LaneKey, size_t> laneOf;
  for (const LaneKey& k : orderedLanes(raw, m)) {
    laneOf[k] = t.lanes.size();
    t.lanes.push_back(laneLabel(k, m));
  }
  double first = raw.front().ts;
  for (const RawSpan& s : raw) first = std::min(first, s.ts);
  for (const RawSpan& s : raw) {
    const double start = (s.ts - first) / 1000, end = (s.ts + s.dur - first) / 1000;
    t.spans.push_back({laneOf.at(s.lane), start, end, s.name, s.category});
    t.endMs = std::max(t.endMs, t.spans.back().endMs);
  }
  std::sort(t.spans.begin(), t.spans.end(), [](const Span& a, const Span& b) {
    return std::make_tuple(a.lane, a.startMs, -a.endMs) <
           std::make_tuple(b.lane, b.startMs, -b.endMs);
  });
  return t;
}

}  // namespace

Timeline parseTimeline(const std::string& path, const std::string& json) {
  Json doc;
  try {
    doc = Json::parse(json);
  } catch (const Json::exception& e) {
    throw DataError(
        fmt::format("trace {}: expected a Chrome trace (JSON): {}", path, jsonReason(e.what())));
  }
  Metadata metadata;
  std::vector<RawSpan> spans;
  const Json& events = eventsOf(doc, path);
  for (size_t i = 0; i < events.size(); ++i) {
    const Json& event = events[i];
    if (!event.is_object()) {
      throw DataError(fmt::format("trace {}: event {}: expected a JSON object, found {}", path, i,
                                  event.type_name()));
    }
    const std::string phase = stringField(event, "ph");
    if (phase == "M") readMetadata(event, metadata);
    if (phase == "X") spans.push_back(readSpan(event, path, i));
  }
  if (spans.empty()) {
    throw DataError(fmt::format(
        "trace {}: no complete event (\"ph\":\"X\") to draw: expected spans with ts and dur",
        path));
  }
  return assemble(path, spans, metadata);
}

Timeline readTimeline(const std::string& path) {
  const std::string text = readInputFile(
      path, "trace " + path, "a Chrome trace (`distrun trace merge -o FILE` writes one)");
  return parseTimeline(path, text);
}

Timeline window(const Timeline& timeline, double fromMs, double toMs) {
  Timeline out;
  out.path = timeline.path;
  std::map<size_t, size_t> laneOf;
  for (const Span& s : timeline.spans) {
    if (s.endMs < fromMs || s.startMs > toMs) continue;
    const auto [it, added] = laneOf.try_emplace(s.lane, out.lanes.size());
    if (added) out.lanes.push_back(timeline.lanes[s.lane]);
    out.spans.push_back(
        {it->second, std::max(s.startMs, fromMs), std::min(s.endMs, toMs), s.name, s.category});
    out.endMs = std::max(out.endMs, out.spans.back().endMs);
  }
  return out;
}

}  // namespace distrun::plot
