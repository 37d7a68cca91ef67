#include "distrun/container/build_progress.h"

#include <ostream>
#include <regex>

#include <fmt/format.h>

#include "distrun/common/writable_file.h"

namespace distrun::container {

namespace {

constexpr size_t kBarWindow = 512;  // the last bar drawn fits in it

std::string stepTimes(const std::vector<std::pair<std::string, double>>& steps) {
  std::string text;
  for (const auto& [name, seconds] : steps) {
    text += fmt::format("{}{} {:.1f} s", text.empty() ? "" : ", ", name, seconds);
  }
  return text;
}

double ratio(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

std::optional<int> lastBarPercent(std::string_view output) {
  if (output.size() > kBarWindow) output = output.substr(output.size() - kBarWindow);
  static const std::regex bar(R"(\]\s+\d+/\d+\s+(\d{1,3})%)");
  std::optional<int> percent;
  const std::string text(output);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), bar); it != std::sregex_iterator();
       ++it) {
    percent = std::stoi((*it)[1].str());
  }
  return percent;
}

std::optional<std::string> lastDebootstrapPhase(std::string_view output) {
  size_t end = output.size();
  while (end > 0) {
    const size_t start = output.rfind('\n', end - 1);
    const size_t from = start == std::string_view::npos ? 0 : start + 1;
    std::string_view line = output.substr(from, end - from);
    if (line.substr(0, 3) == "I: " && end != output.size()) {  // a whole line
      line.remove_prefix(3);
      while (!line.empty() && (line.back() == '.' || line.back() == '\r')) line.remove_suffix(1);
      return std::string(line);
    }
    if (start == std::string_view::npos) break;
    end = start;
  }
  return std::nullopt;
}

ProgressLine::ProgressLine(std::ostream& err, bool terminal, bool quiet,
                           std::function<double()> now, double interval)
    : err_(err), terminal_(terminal), quiet_(quiet), now_(std::move(now)), interval_(interval) {}

void ProgressLine::show(const std::string& text, bool now) {
  if (quiet_) return;
  if (terminal_) {
    err_ << "\r" << text << "\x1b[K" << std::flush;
    onScreen_ = true;
    return;
  }
  const double time = now_();
  if (!now && lastPrinted_ && time - *lastPrinted_ < interval_) return;
  lastPrinted_ = time;
  err_ << text << "\n" << std::flush;
}

void ProgressLine::clear() {
  if (!onScreen_) return;
  err_ << "\r\x1b[K" << std::flush;
  onScreen_ = false;
}

std::string formatReport(const BuildReport& r) {
  std::string text = fmt::format("distrun wrap: before: {} files and folders, {}\n",
                                 r.staged.entries, mebibytes(r.staged.bytes));
  text += fmt::format("distrun wrap: after: 1 file, {} ({}), {}: {:.1f}% of the bytes before\n",
                      r.image, formatName(r.format), mebibytes(r.imageBytes),
                      ratio(r.imageBytes, r.staged.bytes));
  text += fmt::format("distrun wrap: built in {:.1f} s: {}\n", r.seconds, stepTimes(r.steps));
  if (!r.wrapperDir.empty()) {
    text += fmt::format("distrun wrap: wrappers: {} program{} in {}\n", r.wrappers,
                        r.wrappers == 1 ? "" : "s", r.wrapperDir);
  }
  return text;
}

}  // namespace distrun::container
