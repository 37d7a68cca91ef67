#include "distrun/container/build_progress.h"

#include <unistd.h>

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

LiveLineOptions progressLineOptions(bool terminal, bool quiet, std::function<double()> now,
                                    double interval, std::function<int()> columns) {
  LiveLineOptions o;
  o.mode = quiet ? StatusMode::kNone : terminal ? StatusMode::kLine : StatusMode::kPlain;
  o.columns = columns ? std::move(columns)
                      : [] { return terminalColumns(STDERR_FILENO, ProcessEnvironment()); };
  o.now = std::move(now);
  o.plainInterval = interval;
  o.plainFirstAtOnce = true;
  return o;
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
                           std::function<double()> now, double interval,
                           std::function<int()> columns)
    : line_(err,
            progressLineOptions(terminal, quiet, std::move(now), interval, std::move(columns))) {}

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
