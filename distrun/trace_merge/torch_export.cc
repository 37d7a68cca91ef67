#include "distrun/trace_merge/torch_export.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::trace_merge {

namespace {

using nlohmann::json;
using Event = json::parse_event_t;

constexpr const char* kExpected =
    "expected PyTorch's export_chrome_trace output (a list of events) or {\"traceEvents\": "
    "[...], \"distrunClockStartUs\": ..., \"distrunRealtimeStartUs\": ...}";

// Follows the parse, handing each event to `onEvent` and dropping it.
class ExportParser {
 public:
  ExportParser(const std::string& path, const std::function<void(json&)>& onEvent)
      : path_(path), onEvent_(onEvent) {}

  bool operator()(int depth, Event event, json& parsed);
  TorchExport& result() { return result_; }

 private:
  void take(json& event);
  void check(const json& event, const std::string& ph) const;
  [[noreturn]] void fail(const std::string& what) const;

  const std::string& path_;
  const std::function<void(json&)>& onEvent_;
  TorchExport result_;
  std::string key_;  // the object form's key being parsed
  uint64_t number_ = 0;
};

bool ExportParser::operator()(int depth, Event event, json& parsed) {
  if (depth == 0 && event == Event::object_start) result_.objectForm = true;
  if (depth == 0 && (event == Event::value)) fail(fmt::format("a JSON {}", parsed.type_name()));
  if (depth == 1 && event == Event::key) key_ = parsed.get<std::string>();
  const int eventDepth = result_.objectForm ? 2 : 1;
  const bool inEvents = !result_.objectForm || key_ == "traceEvents";
  if (depth != eventDepth || !inEvents) return true;
  if (event == Event::value)
    fail(fmt::format("event {} is a JSON {}", ++number_, parsed.type_name()));
  if (event != Event::object_end && event != Event::array_end) return true;
  if (event == Event::array_end) fail(fmt::format("event {} is a list", ++number_));
  ++number_;
  take(parsed);
  return false;  // not kept in memory
}

void ExportParser::check(const json& event, const std::string& ph) const {
  const std::string at = fmt::format("event {}", number_);
  if (!event.contains("name") || !event["name"].is_string())
    fail(at + ": \"name\" is not a string");
  if (!event.contains("ts") || !event["ts"].is_number()) fail(at + ": \"ts\" is not a number");
  if (ph != "X") return;
  if (!event.contains("dur") || !event["dur"].is_number() || event["dur"].get<double>() < 0) {
    fail(at + ": \"dur\" is not a number >= 0");
  }
}

void ExportParser::take(json& event) {
  auto ph = event.find("ph");
  const std::string phase = ph != event.end() && ph->is_string() ? ph->get<std::string>() : "";
  if (phase != "X" && phase != "i" && phase != "I" && phase != "C") {
    ++result_.skipped;
    return;
  }
  check(event, phase);
  if (phase == "I") event["ph"] = "i";
  ++result_.events;
  result_.firstTs = std::min(result_.firstTs, event["ts"].get<double>());
  onEvent_(event);
}

void ExportParser::fail(const std::string& what) const {
  throw DataError(fmt::format("{}: {}: {}", path_, what, kExpected));
}

std::optional<double> numberOf(const json& top, const char* key, const std::string& path) {
  auto it = top.find(key);
  if (it == top.end()) return std::nullopt;
  if (!it->is_number()) {
    throw DataError(fmt::format("{}: \"{}\" is not a number: expected microseconds", path, key));
  }
  return it->get<double>();
}

void readClockFields(const json& top, const std::string& path, TorchExport& result) {
  result.clockStartUs = numberOf(top, "distrunClockStartUs", path);
  result.realtimeStartUs = numberOf(top, "distrunRealtimeStartUs", path);
  auto host = top.find("distrunHost");
  if (host != top.end() && host->is_string()) result.host = host->get<std::string>();
  if (!top.contains("traceEvents") || !top["traceEvents"].is_array()) {
    throw DataError(fmt::format("{}: no \"traceEvents\" list: {}", path, kExpected));
  }
}

}  // namespace

bool isTorchCollective(const json& event) {
  if (event["ph"] != "X") return false;
  const std::string& name = event["name"].get_ref<const std::string&>();
  for (const char* backend : {"gloo:", "nccl:", "mpi:", "ucc:"}) {
    if (name.starts_with(backend)) return true;
  }
  return false;
}

TorchExport readTorchExport(const std::string& path, const std::function<void(json&)>& onEvent) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw IoError(fmt::format("cannot open {}: {}", path,
                              errno != 0 ? std::strerror(errno) : "unknown error"));
  }
  ExportParser parser(path, onEvent);
  json top;
  try {
    top = json::parse(in, std::ref(parser));
  } catch (const json::parse_error& e) {
    if (in.bad()) throw IoError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    throw DataError(fmt::format("{}: not whole JSON (byte {}): {}", path, e.byte, kExpected));
  } catch (const json::out_of_range&) {
    throw DataError(fmt::format("{}: a number beyond a double's range: {}", path, kExpected));
  }
  TorchExport result = parser.result();
  if (result.objectForm) readClockFields(top, path, result);
  return result;
}

}  // namespace distrun::trace_merge
