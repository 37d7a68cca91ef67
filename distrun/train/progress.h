#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "distrun/train/metrics.h"

namespace distrun::train {

// kBar: a live line redrawn in place (a terminal); kEpochs: one line per
// epoch (logs, pipes); kAuto: kBar when the stream is a terminal.
enum class ProgressStyle { kAuto, kBar, kEpochs, kNone };

// "auto", "bar", "epochs", "none"; UsageError naming the text otherwise.
ProgressStyle parseProgressStyle(const std::string& text);

// Rank 0's progress: redraws at most 10 times a second.
class ProgressReporter {
 public:
  ProgressReporter(std::ostream& out, ProgressStyle style, int64_t epochs, int64_t stepsPerEpoch);
  void step(int64_t epoch, int64_t step, double runningLoss);  // 0-based epoch, 1-based step
  // An epoch resumed mid-way on another world size has steps of its own.
  void setStepsPerEpoch(int64_t steps) { stepsPerEpoch_ = steps; }
  void epochDone(const EpochMetrics& metrics);
  void message(const std::string& line);
  // Erases the bar, if shown, so that the next line starts clean.
  void clearBar();

 private:
  std::ostream& out_;
  ProgressStyle style_;
  int64_t epochs_;
  int64_t stepsPerEpoch_;
  bool barShown_ = false;
  std::chrono::steady_clock::time_point lastDraw_;
};

}  // namespace distrun::train
