#include "distrun/trace_merge/trace_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>
#include <tuple>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::trace_merge {

namespace fs = std::filesystem;

namespace {

constexpr const char* kWhatToGive =
    "give the folder that distrun train --trace DIR (or DISTRUN_TRACE=DIR) wrote";

// N of PREFIX<N>SUFFIX, for a decimal N of at most 9 digits.
std::optional<int> numberIn(std::string_view name, std::string_view prefix,
                            std::string_view suffix) {
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return std::nullopt;
  }
  std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 9 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  int n = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::optional<TraceSource> sourceOf(const fs::path& path) {
  const std::string name = path.filename().string();
  if (auto r = numberIn(name, "rank", ".jsonl")) return TraceSource{SourceKind::kWorker, *r, {}};
  if (auto n = numberIn(name, "agent", ".jsonl")) return TraceSource{SourceKind::kAgent, *n, {}};
  if (auto r = numberIn(name, "torch-rank", ".json")) {
    return TraceSource{SourceKind::kTorch, *r, {}};
  }
  return std::nullopt;
}

void checkFolder(const std::string& folder) {
  std::error_code ec;
  const fs::file_status status = fs::status(folder, ec);
  if (!fs::exists(status)) {
    throw Error(ExitCode::kNoInput,
                fmt::format("trace folder {}: does not exist: {}", folder, kWhatToGive));
  }
  if (!fs::is_directory(status)) {
    throw Error(ExitCode::kNoInput,
                fmt::format("trace folder {}: not a folder: {}", folder, kWhatToGive));
  }
}

std::vector<TraceSource> listSources(const std::string& folder) {
  std::vector<TraceSource> sources;
  std::error_code ec;
  fs::directory_iterator it(folder, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::optional<TraceSource> source = sourceOf(it->path());
    if (!source) continue;
    source->path = (fs::path(folder) / it->path().filename()).string();
    sources.push_back(*source);
  }
  if (ec) {
    throw IoError(fmt::format("trace folder {}: cannot list it: {}", folder, ec.message()));
  }
  return sources;
}

}  // namespace

std::vector<TraceSource> findTraceFiles(const std::string& folder) {
  checkFolder(folder);
  std::vector<TraceSource> sources = listSources(folder);
  if (sources.empty()) {
    throw Error(ExitCode::kNoInput,
                fmt::format("trace folder {}: no trace files in it (rank<R>.jsonl, "
                            "agent<N>.jsonl, torch-rank<R>.json): {}",
                            folder, kWhatToGive));
  }
  std::sort(sources.begin(), sources.end(), [](const TraceSource& a, const TraceSource& b) {
    return std::tie(a.kind, a.index, a.path) < std::tie(b.kind, b.index, b.path);
  });
  return sources;
}

std::string labelOf(const TraceSource& source) {
  switch (source.kind) {
    case SourceKind::kWorker:
      return fmt::format("rank {}", source.index);
    case SourceKind::kAgent:
      return fmt::format("launcher node {}", source.index);
    case SourceKind::kTorch:
      return fmt::format("torch rank {}", source.index);
  }
  return "";
}

}  // namespace distrun::trace_merge
