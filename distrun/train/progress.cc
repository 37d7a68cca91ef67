#include "distrun/train/progress.h"

#include <unistd.h>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::train {

namespace {

constexpr int kBarWidth = 30;

}  // namespace

ProgressStyle parseProgressStyle(const std::string& text) {
  if (text == "auto") return ProgressStyle::kAuto;
  if (text == "bar") return ProgressStyle::kBar;
  if (text == "epochs") return ProgressStyle::kEpochs;
  if (text == "none") return ProgressStyle::kNone;
  throw UsageError(fmt::format("progress style '{}': expected auto, bar, epochs or none", text));
}

ProgressReporter::ProgressReporter(std::ostream& out, ProgressStyle style, int64_t epochs,
                                   int64_t stepsPerEpoch)
    : out_(out), style_(style), epochs_(epochs), stepsPerEpoch_(stepsPerEpoch) {
  if (style_ == ProgressStyle::kAuto) {
    style_ = ::isatty(STDOUT_FILENO) != 0 ? ProgressStyle::kBar : ProgressStyle::kEpochs;
  }
}

void ProgressReporter::step(int64_t epoch, int64_t step, double runningLoss) {
  if (style_ != ProgressStyle::kBar) return;
  const auto now = std::chrono::steady_clock::now();
  if (barShown_ && step != stepsPerEpoch_ && now - lastDraw_ < std::chrono::milliseconds(100)) {
    return;
  }
  lastDraw_ = now;
  const auto filled = static_cast<int>(kBarWidth * step / std::max<int64_t>(stepsPerEpoch_, 1));
  out_ << fmt::format("\repoch {}/{} [{}{}] {}/{}  loss {:.4f}", epoch + 1, epochs_,
                      std::string(static_cast<size_t>(filled), '#'),
                      std::string(static_cast<size_t>(kBarWidth - filled), '.'), step,
                      stepsPerEpoch_, runningLoss)
       << std::flush;
  barShown_ = true;
}

void ProgressReporter::clearBar() {
  if (!barShown_) return;
  out_ << "\r\033[K";
  barShown_ = false;
}

void ProgressReporter::epochDone(const EpochMetrics& metrics) {
  if (style_ == ProgressStyle::kNone) return;
  clearBar();
  out_ << epochLine(metrics, epochs_) << std::endl;
}

void ProgressReporter::message(const std::string& line) {
  if (style_ == ProgressStyle::kNone) return;
  clearBar();
  out_ << line << std::endl;
}

}  // namespace distrun::train
