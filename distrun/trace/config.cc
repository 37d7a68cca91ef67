#include "distrun/trace/config.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/unique_fd.h"

namespace distrun::trace {

namespace {

constexpr int64_t kMaxMb = int64_t{1} << 20;  // a terabyte per file

std::optional<int64_t> wholeNumber(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || at != end || text.empty()) return std::nullopt;
  return value;
}

std::optional<double> number(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || at != end || text.empty()) return std::nullopt;
  return value;
}

std::vector<double> parseSkew(const std::string& text) {
  std::vector<double> skew;
  for (const std::string& item : split(text, ',')) {
    std::optional<double> us = number(trim(item));
    if (!us) {
      throw UsageError(fmt::format(
          "DISTRUN_TRACE_CLOCK_SKEW_US={}: expected microseconds per rank, comma-separated "
          "(0,5000000)",
          text));
    }
    skew.push_back(*us);
  }
  return skew;
}

}  // namespace

double TraceConfig::skewOf(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= skewUs.size()) return 0;
  return skewUs[static_cast<size_t>(rank)];
}

StepWindow parseStepWindow(std::string_view text, std::string_view what) {
  const size_t colon = text.find(':');
  std::optional<int64_t> first, last;
  if (colon != std::string_view::npos) {
    first = wholeNumber(text.substr(0, colon));
    last = wholeNumber(text.substr(colon + 1));
  }
  if (!first || !last || *first < 1 || *last < *first) {
    throw UsageError(fmt::format(
        "{}: expected FIRST:LAST, global training steps counted from 1 with FIRST <= LAST "
        "(1:100)",
        what));
  }
  return {*first, *last};
}

uint64_t parseMaxMb(std::string_view text, std::string_view what) {
  std::optional<int64_t> mb = wholeNumber(text);
  if (!mb || *mb < 1 || *mb > kMaxMb) {
    throw UsageError(
        fmt::format("{}: expected a whole number of megabytes per file, at least 1", what));
  }
  return static_cast<uint64_t>(*mb) << 20;
}

TraceConfig readTraceConfig(const Environment& env) {
  TraceConfig config;
  config.folder = env.get("DISTRUN_TRACE").value_or("");
  if (!config.on()) return config;
  if (auto steps = env.get("DISTRUN_TRACE_STEPS"); steps && !steps->empty()) {
    config.window =
        parseStepWindow(*steps, fmt::format("DISTRUN_TRACE_STEPS={} (--trace-steps)", *steps));
  }
  if (auto mb = env.get("DISTRUN_TRACE_MAX_MB"); mb && !mb->empty()) {
    config.maxBytes = parseMaxMb(*mb, fmt::format("DISTRUN_TRACE_MAX_MB={} (--trace-max-mb)", *mb));
  }
  if (auto skew = env.get("DISTRUN_TRACE_CLOCK_SKEW_US"); skew && !skew->empty()) {
    config.skewUs = parseSkew(*skew);
  }
  return config;
}

void prepareFolder(const std::string& folder, std::string_view what) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) {
    throw IoError(
        fmt::format("{} {}: cannot create the folder: {}", what, folder, error.message()));
  }
  const std::string probe = fmt::format("{}/.distrun-trace-probe.{}", folder, ::getpid());
  UniqueFd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) {
    throw IoError(
        fmt::format("{} {}: cannot create a file in it: {}", what, folder, std::strerror(errno)));
  }
  ::unlink(probe.c_str());
}

}  // namespace distrun::trace
