#include "distrun/trace/event.h"

#include <iterator>

#include <fmt/format.h>

namespace distrun::trace {

namespace {

// The event's fields shared by every kind, up to and including "ts".
void appendStart(std::string& out, std::string_view name, std::string_view category,
                 std::string_view phase, double atUs) {
  fmt::format_to(std::back_inserter(out), R"({{"name":{},"cat":{},"ph":"{}","ts":{:.3f})",
                 jsonString(name), jsonString(category), phase, atUs);
}

void appendEnd(std::string& out, Thread thread, const Args& args) {
  fmt::format_to(std::back_inserter(out), R"(,"tid":"{}")", nameOf(thread));
  if (!args.empty()) {
    out += R"(,"args":{)";
    out += args.members();
    out += '}';
  }
  out += '}';
}

}  // namespace

std::string_view nameOf(Thread thread) {
  switch (thread) {
    case Thread::kCompute:
      return "compute";
    case Thread::kData:
      return "data";
    case Thread::kComm:
      return "comm";
    case Thread::kLauncher:
      return "launcher";
  }
  return "compute";
}

std::string headerLine(const Header& h) {
  return fmt::format(
      R"({{"trace":"distrun","version":1,"rank":{},"world_size":{},"local_rank":{},)"
      R"("node_rank":{},"host":{},"pid":{},"process":{},"restart":{},"clock":"monotonic_us",)"
      R"("monotonic_us":{:.3f},"realtime_us":{:.3f}}})",
      h.rank, h.worldSize, h.localRank, h.nodeRank, jsonString(h.host), h.pid,
      jsonString(h.process), h.restart, h.monotonicUs, h.realtimeUs);
}

std::string spanLine(std::string_view name, std::string_view category, Thread thread,
                     double startUs, double durationUs, const Args& args) {
  std::string out;
  out.reserve(160 + args.members().size());
  appendStart(out, name, category, "X", startUs);
  fmt::format_to(std::back_inserter(out), R"(,"dur":{:.3f})", durationUs);
  appendEnd(out, thread, args);
  return out;
}

std::string instantLine(std::string_view name, std::string_view category, Thread thread,
                        double atUs, const Args& args) {
  std::string out;
  out.reserve(140 + args.members().size());
  appendStart(out, name, category, "i", atUs);
  out += R"(,"s":"t")";
  appendEnd(out, thread, args);
  return out;
}

std::string clockOffsetLine(double offsetUs, double rttUs) {
  return fmt::format(R"({{"clock_offset":{{"to_rank":0,"offset_us":{:.3f},"rtt_us":{:.3f}}}}})",
                     offsetUs, rttUs);
}

std::string cappedLine(uint64_t bytes) {
  return fmt::format(R"({{"trace_capped":{{"bytes":{}}}}})", bytes);
}

}  // namespace distrun::trace
