#include "distrun/trace_merge/trace_lines.h"

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::trace_merge {

namespace {

using nlohmann::json;

// "a string", "missing", ...: what a field holds, in a message.
std::string describe(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) return "missing";
  switch (it->type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "a list";
    case json::value_t::object:
      return "an object";
    default:
      return "the number " + it->dump();
  }
}

[[noreturn]] void badField(const json& object, const char* key, const std::string& where,
                           const std::string& expected) {
  throw DataError(
      fmt::format("{}: \"{}\" is {}: expected {}", where, key, describe(object, key), expected));
}

double numberField(const json& object, const char* key, const std::string& where,
                   const std::string& expected) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) badField(object, key, where, expected);
  return it->get<double>();
}

int intField(const json& object, const char* key, const std::string& where,
             const std::string& expected) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) badField(object, key, where, expected);
  return it->get<int>();
}

std::string stringField(const json& object, const char* key, const std::string& where,
                        const std::string& expected) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) badField(object, key, where, expected);
  return it->get<std::string>();
}

// An optional integer field: `fallback` when absent.
int optionalInt(const json& object, const char* key, const std::string& where, int fallback) {
  return object.contains(key) ? intField(object, key, where, "an integer") : fallback;
}

void checkProcess(const TraceHeader& h, const json& line, const std::string& where) {
  if (h.process != "worker" && h.process != "agent") {
    badField(line, "process", where, "\"worker\" or \"agent\"");
  }
  if (h.process == "worker" && h.rank < 0) badField(line, "rank", where, "a rank >= 0");
}

void checkVersion(const json& line, const std::string& where) {
  const int version = intField(line, "version", where, "the trace format's version");
  if (version != kTraceVersion) {
    throw DataError(fmt::format(
        "{}: trace format version {}, this distrun reads version {}: merge it with the distrun "
        "that recorded it",
        where, version, kTraceVersion));
  }
}

void checkArgs(const json& event, bool counter, const std::string& where) {
  auto args = event.find("args");
  if (args == event.end()) return;
  if (!args->is_object()) badField(event, "args", where, "an object");
  if (!counter) return;
  for (const auto& [name, value] : args->items()) {
    if (!value.is_number()) {
      throw DataError(
          fmt::format("{}: counter \"{}\" is not a number: expected a number", where, name));
    }
  }
}

}  // namespace

LineKind classifyLine(const json& line, const std::string& where) {
  if (line.contains("ph")) return LineKind::kEvent;
  if (line.contains("trace")) return LineKind::kHeader;
  if (line.contains("clock_offset")) return LineKind::kClockOffset;
  if (line.contains("trace_capped")) return LineKind::kCapped;
  throw DataError(fmt::format(
      "{}: an object with none of \"ph\", \"trace\", \"clock_offset\", \"trace_capped\": expected "
      "an event, a header, the clock line or the size cap's line",
      where));
}

TraceHeader parseHeader(const json& line, const std::string& where) {
  if (line.value("trace", json()) != "distrun") badField(line, "trace", where, "\"distrun\"");
  checkVersion(line, where);
  TraceHeader h;
  h.process = stringField(line, "process", where, "\"worker\" or \"agent\"");
  h.rank = intField(line, "rank", where, "the global rank (-1 for an agent)");
  h.worldSize = optionalInt(line, "world_size", where, 0);
  h.localRank = optionalInt(line, "local_rank", where, -1);
  h.nodeRank = optionalInt(line, "node_rank", where, -1);
  h.host = stringField(line, "host", where, "the host's name");
  h.pid = optionalInt(line, "pid", where, 0);
  h.restart = optionalInt(line, "restart", where, 0);
  h.monotonicUs = numberField(line, "monotonic_us", where, "microseconds of CLOCK_MONOTONIC");
  h.realtimeUs = numberField(line, "realtime_us", where, "microseconds since 1970");
  checkProcess(h, line, where);
  return h;
}

ClockOffset parseClockOffset(const json& line, const std::string& where) {
  const json& c = line.at("clock_offset");
  const std::string at = where + ": clock_offset";
  if (!c.is_object()) badField(line, "clock_offset", where, "an object");
  ClockOffset o;
  o.toRank = optionalInt(c, "to_rank", at, 0);
  o.offsetUs = numberField(c, "offset_us", at, "microseconds");
  o.rttUs = c.contains("rtt_us") ? numberField(c, "rtt_us", at, "microseconds") : 0.0;
  if (o.toRank != 0) badField(c, "to_rank", at, "0 (offsets are measured to rank 0)");
  return o;
}

uint64_t parseCappedBytes(const json& line, const std::string& where) {
  const json& c = line.at("trace_capped");
  if (!c.is_object()) badField(line, "trace_capped", where, "an object");
  const double bytes = numberField(c, "bytes", where + ": trace_capped", "the cap in bytes");
  return bytes > 0 ? static_cast<uint64_t>(bytes) : 0;
}

void checkEvent(const json& event, const std::string& where) {
  stringField(event, "name", where, "the event's name");
  const std::string ph = stringField(event, "ph", where, "\"X\", \"i\" or \"C\"");
  if (ph != "X" && ph != "i" && ph != "C") {
    throw DataError(fmt::format("{}: \"ph\" is \"{}\": expected \"X\", \"i\" or \"C\"", where, ph));
  }
  numberField(event, "ts", where, "a number of microseconds");
  if (ph == "X" && numberField(event, "dur", where, "a number of microseconds") < 0) {
    badField(event, "dur", where, "a number of microseconds >= 0");
  }
  if (event.contains("tid") && !event["tid"].is_string()) {
    badField(event, "tid", where, "the thread's name: compute, data, comm or launcher");
  }
  checkArgs(event, ph == "C", where);
}

std::string threadOf(const json& event) {
  auto it = event.find("tid");
  return it != event.end() && it->is_string() ? it->get<std::string>() : "compute";
}

std::optional<CollectiveId> collectiveOf(const json& event) {
  auto cat = event.find("cat");
  if (cat == event.end() || *cat != "comm") return std::nullopt;
  auto args = event.find("args");
  if (args == event.end() || !args->is_object()) return std::nullopt;
  auto comm = args->find("comm");
  auto seq = args->find("seq");
  if (comm == args->end() || seq == args->end()) return std::nullopt;
  if (!comm->is_number_integer() || !seq->is_number_integer()) return std::nullopt;
  return CollectiveId{comm->get<int64_t>(), seq->get<int64_t>()};
}

std::optional<int> startedRankOf(const json& event) {
  auto name = event.find("name");
  if (name == event.end() || *name != kWorkerStarted) return std::nullopt;
  auto args = event.find("args");
  if (args == event.end() || !args->is_object()) return std::nullopt;
  auto rank = args->find("rank");
  if (rank == args->end() || !rank->is_number_integer()) return std::nullopt;
  return rank->get<int>();
}

}  // namespace distrun::trace_merge
