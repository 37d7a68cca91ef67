// Fuzzes `distrun trace merge` (distrun/trace_merge/merge.h) over a trace
// folder whose files come from the input: the bytes up to each NUL are the
// next of rank0.jsonl, rank1.jsonl, agent0.jsonl and torch-rank1.json. The
// merge either refuses with a distrun error or writes one JSON document.
#include <filesystem>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "distrun/trace_merge/merge.h"
#include "fuzz/fuzz_support.h"

namespace {

constexpr const char* kFiles[] = {"rank0.jsonl", "rank1.jsonl", "agent0.jsonl", "torch-rank1.json"};

// The folder holding this input's files (those of the last input removed).
std::string writeFolder(std::string_view bytes) {
  const std::string folder = distrun::fuzz::scratchPath("traces");
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  for (const char* name : kFiles) {
    const size_t end = bytes.find('\0');
    if (end != 0) distrun::fuzz::writeScratch(folder + "/" + name, bytes.substr(0, end));
    if (end == std::string_view::npos) break;
    bytes.remove_prefix(end + 1);
  }
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string folder = writeFolder(distrun::fuzz::asText(data, size));
  std::ostringstream out;
  if (distrun::fuzz::expectingErrors([&] { distrun::trace_merge::mergeTraces(folder, out); })) {
    const nlohmann::json trace = nlohmann::json::parse(out.str(), nullptr, false);
    distrun::fuzz::check(!trace.is_discarded(), "the merged trace is JSON");
    distrun::fuzz::check(trace.contains("traceEvents"), "the merged trace has traceEvents");
  }
  return 0;
}
