#include "distrun/common/live_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <charconv>
#include <ostream>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun {

namespace {

constexpr int kDefaultColumns = 80;
constexpr const char* kErase = "\r\x1b[K";

bool isContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

size_t codePoints(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += isContinuationByte(c) ? 0 : 1;
  return n;
}

// The first `width` code points of `text`.
std::string_view cut(std::string_view text, size_t width) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (isContinuationByte(text[i])) continue;
    if (seen++ == width) return text.substr(0, i);
  }
  return text;
}

}  // namespace

StatusMode parseStatusMode(const std::string& text, const std::string& flag) {
  if (text == "auto") return StatusMode::kAuto;
  if (text == "line") return StatusMode::kLine;
  if (text == "plain") return StatusMode::kPlain;
  if (text == "none") return StatusMode::kNone;
  throw UsageError(fmt::format("{} '{}': expected auto, line, plain or none", flag, text));
}

StatusMode resolveStatusMode(StatusMode mode, bool terminal) {
  if (mode != StatusMode::kAuto) return mode;
  return terminal ? StatusMode::kLine : StatusMode::kPlain;
}

bool consoleIsTerminal(const Environment& env) {
  return ::isatty(STDOUT_FILENO) != 0 && ::isatty(STDERR_FILENO) != 0 &&
         env.get("TERM").value_or("") != "dumb";
}

int terminalColumns(int fd, const Environment& env) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  const std::string columns = env.get("COLUMNS").value_or("");
  int value = 0;
  auto [end, error] = std::from_chars(columns.data(), columns.data() + columns.size(), value);
  if (error == std::errc() && end == columns.data() + columns.size() && value > 0) return value;
  return kDefaultColumns;
}

std::string fitToWidth(std::string_view text, int width) {
  const auto limit = static_cast<size_t>(std::max(width, 0));
  while (codePoints(text) > limit) {
    const size_t lastGap = text.rfind("  ");
    if (lastGap == std::string_view::npos) return std::string(cut(text, limit));
    text = text.substr(0, lastGap);
  }
  return std::string(text);
}

LiveLine::LiveLine(std::ostream& out, LiveLineOptions options) : out_(out), o_(std::move(options)) {
  if (o_.mode == StatusMode::kPlain && !o_.plainFirstAtOnce) lastPlain_ = o_.now();
}

LiveLine::~LiveLine() { clear(); }

void LiveLine::show(std::string text, bool force) {
  if (o_.mode == StatusMode::kNone) return;
  if (text.empty()) return hide();
  const bool changed = text != text_;
  text_ = std::move(text);
  if (o_.mode == StatusMode::kPlain) {
    if (force || !lastPlain_ || o_.now() - *lastPlain_ >= o_.plainInterval) print();
    return;
  }
  if (onScreen_ && !changed && !force) return;
  pending_ = true;
  if (force || !onScreen_ || o_.now() - lastDraw_ >= o_.redrawInterval) draw();
}

void LiveLine::clear() {
  if (!onScreen_) return;
  out_ << kErase << std::flush;
  onScreen_ = false;
}

void LiveLine::hide() {
  clear();
  text_.clear();
  pending_ = false;
}

void LiveLine::tick() {
  std::optional<double> due = nextDue();
  if (!due || o_.now() < *due) return;
  o_.mode == StatusMode::kPlain ? print() : draw();
}

std::optional<double> LiveLine::nextDue() const {
  if (text_.empty() || o_.mode == StatusMode::kNone) return std::nullopt;
  if (o_.mode == StatusMode::kPlain) {
    return lastPlain_ ? *lastPlain_ + o_.plainInterval : o_.now();
  }
  if (!onScreen_) return o_.now();
  if (pending_) return lastDraw_ + o_.redrawInterval;
  return std::nullopt;
}

void LiveLine::draw() {
  const int columns = o_.columns ? o_.columns() : kDefaultColumns;
  out_ << '\r' << fitToWidth(text_, columns - 1) << "\x1b[K" << std::flush;
  onScreen_ = true;
  pending_ = false;
  lastDraw_ = o_.now();
}

void LiveLine::print() {
  out_ << o_.plainPrefix << text_ << '\n' << std::flush;
  lastPlain_ = o_.now();
}

}  // namespace distrun
