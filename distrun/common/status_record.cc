#include "distrun/common/status_record.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "distrun/common/progress_report.h"
#include "distrun/common/sigpipe.h"

namespace distrun {

namespace {

constexpr std::string_view kWord = "status";

// One field of the format: its key and where it lives in the record.
struct IntField {
  const char* key;
  std::optional<int64_t> StatusRecord::*member;
};
struct RealField {
  const char* key;
  std::optional<double> StatusRecord::*member;
};

// The order the fields are written in.
constexpr IntField kIntFields[] = {{"epoch", &StatusRecord::epoch},
                                   {"epochs", &StatusRecord::epochs},
                                   {"step", &StatusRecord::step},
                                   {"steps", &StatusRecord::steps},
                                   {"slowest_rank", &StatusRecord::slowestRank},
                                   {"slowest_step", &StatusRecord::slowestStep}};
constexpr RealField kRealFields[] = {{"loss", &StatusRecord::loss},
                                     {"samples_per_s", &StatusRecord::samplesPerSecond},
                                     {"eta_s", &StatusRecord::etaSeconds}};

template <typename T>
std::optional<T> number(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [last, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || last != end) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) return std::nullopt;
  }
  return value;
}

void setField(StatusRecord& record, std::string_view key, std::string_view value) {
  for (const IntField& f : kIntFields) {
    if (key == f.key) record.*f.member = number<int64_t>(value);
  }
  for (const RealField& f : kRealFields) {
    if (key == f.key) record.*f.member = number<double>(value);
  }
}

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t start = text.find_first_not_of(" \t\r");
    if (start == std::string_view::npos) break;
    const size_t end = text.find_first_of(" \t\r", start);
    out.push_back(text.substr(start, end - start));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end);
  }
  return out;
}

// Where the last "status" word starts: at the line's start or after a
// byte that is not a letter, and followed by a blank or the end.
std::optional<size_t> lastStatusWord(std::string_view line) {
  for (size_t at = line.rfind(kWord); at != std::string_view::npos;
       at = at == 0 ? std::string_view::npos : line.rfind(kWord, at - 1)) {
    const size_t after = at + kWord.size();
    const bool startsWord = at == 0 || !std::isalpha(static_cast<unsigned char>(line[at - 1]));
    const bool endsWord = after == line.size() || line[after] == ' ' || line[after] == '\t';
    if (startsWord && endsWord) return at;
  }
  return std::nullopt;
}

std::string samplesPart(double perSecond) {
  return perSecond < 10 ? fmt::format("{:.1f} samples/s", perSecond)
                        : fmt::format("{:.0f} samples/s", perSecond);
}

std::string ofTotal(const char* name, int64_t value, const std::optional<int64_t>& total) {
  return total ? fmt::format("{} {}/{}", name, value, *total) : fmt::format("{} {}", name, value);
}

}  // namespace

std::string formatStatusRecord(const StatusRecord& record) {
  std::string line(kWord);
  for (const IntField& f : kIntFields) {
    if (record.*f.member) line += fmt::format(" {}={}", f.key, *(record.*f.member));
  }
  for (const RealField& f : kRealFields) {
    if (record.*f.member) line += fmt::format(" {}={:g}", f.key, *(record.*f.member));
  }
  return line + "\n";
}

std::optional<StatusRecord> parseStatusRecord(std::string_view line) {
  std::optional<size_t> at = lastStatusWord(line);
  if (!at) return std::nullopt;
  StatusRecord record;
  for (std::string_view word : words(line.substr(*at + kWord.size()))) {
    const size_t equals = word.find('=');
    if (equals == std::string_view::npos) continue;
    setField(record, word.substr(0, equals), word.substr(equals + 1));
  }
  return record;
}

std::string describeStatus(const StatusRecord& r) {
  std::vector<std::string> parts;
  if (r.epoch) parts.push_back(ofTotal("epoch", *r.epoch, r.epochs));
  if (r.step) parts.push_back(ofTotal("step", *r.step, r.steps));
  if (r.loss) parts.push_back(fmt::format("loss {:.4f}", *r.loss));
  if (r.samplesPerSecond) parts.push_back(samplesPart(*r.samplesPerSecond));
  if (r.etaSeconds) parts.push_back("ETA " + formatDuration(*r.etaSeconds));
  if (r.slowestRank) {
    parts.push_back(r.slowestStep
                        ? fmt::format("slowest rank {} (step {})", *r.slowestRank, *r.slowestStep)
                        : fmt::format("slowest rank {}", *r.slowestRank));
  }
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : "  ") + part;
  return text;
}

std::string formatDuration(double seconds) {
  const auto total = static_cast<long long>(std::llround(std::max(seconds, 0.0)));
  if (total < 60) return fmt::format("{} s", total);
  if (total < 3600) return fmt::format("{}:{:02}", total / 60, total % 60);
  return fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60);
}

void StatusRecordReader::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (c == '\n') {
      if (!tooLong_) {
        if (std::optional<StatusRecord> r = parseStatusRecord(line_)) latest_ = std::move(r);
      }
      line_.clear();
      tooLong_ = false;
    } else if (line_.empty() && c == '.') {
      continue;  // a step's report between records
    } else if (line_.size() < kMaxLine) {
      line_ += c;
    } else {
      tooLong_ = true;
    }
  }
}

StatusReporter::StatusReporter(int fd, std::function<double()> now, double interval)
    : fd_(fd), now_(std::move(now)), interval_(interval) {}

bool StatusReporter::due() const { return fd_ >= 0 && (!last_ || now_() - *last_ >= interval_); }

void StatusReporter::report(const StatusRecord& record, bool force) {
  if (fd_ < 0 || (!force && !due())) return;
  last_ = now_();
  const std::string line = formatStatusRecord(record);
  [[maybe_unused]] ssize_t written = writeWithoutSigpipe(fd_, line.data(), line.size());
}

void reportStatus(const StatusRecord& record, bool force) {
  static std::mutex mutex;
  static StatusReporter reporter(progressFdFrom(ProcessEnvironment()).value_or(-1), [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  });
  std::lock_guard<std::mutex> lock(mutex);
  reporter.report(record, force);
}

}  // namespace distrun
