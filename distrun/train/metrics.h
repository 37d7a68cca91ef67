#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace distrun::train {

// One epoch as rank 0 reports it; losses and accuracy are over all ranks.
struct EpochMetrics {
  int64_t epoch = 0;                   // 1-based
  double trainLoss = 0;                // mean over the epoch's samples
  std::optional<double> testLoss;      // mean over the test set
  std::optional<double> testAccuracy;  // fraction, 0..1
  double samplesPerSecond = 0;         // all ranks' training samples / seconds
  double seconds = 0;                  // the epoch's training steps (no evaluation)
  // Per rank: seconds from the end of backward until the averaged
  // gradients were in grad(), summed over the epoch's steps (DDP's wait on
  // its all-reduces, and so on the slowest rank). Empty in a history
  // written before it was recorded.
  std::vector<double> syncSeconds;
};

struct RunDescription {
  std::string workload;
  std::string runtime = "distrun";
  int worldSize = 1;
  int64_t batchSize = 0;  // per rank
  int threadsPerRank = 1;
};

// {"workload":..., "runtime":..., "world_size":..., "batch_size":...,
//  "threads_per_rank":..., "epochs":[{"epoch":1, "train_loss":...,
//  "test_loss":... or null, "test_accuracy":... or null,
//  "samples_per_second":..., "seconds":...}]}
std::string metricsJson(const RunDescription& run, const std::vector<EpochMetrics>& epochs);

// Writes metricsJson() to `path` atomically (writeMetricsText).
void writeMetricsFile(const std::string& path, const RunDescription& run,
                      const std::vector<EpochMetrics>& epochs);

// Writes `text` to `path` (a --metrics PATH) with writeFileAtomically: a
// reader sees the previous epoch's file or this one, never a part. IoError
// "--metrics PATH: STEP: REASON" (exit 74) on failure.
void writeMetricsText(const std::string& path, const std::string& text);

// "epoch 1/3  loss 0.2345  test loss 0.0789  accuracy 97.55%  1234 samples/s  6.5 s"
std::string epochLine(const EpochMetrics& m, int64_t epochs);

}  // namespace distrun::train

namespace distrun::train {

// The "epochs" of a metricsJson() document; DataError when it is not one.
std::vector<EpochMetrics> parseMetricsEpochs(const std::string& json);

// The run a metricsJson() document describes (its fields other than
// "epochs"); a field it lacks keeps RunDescription's default. DataError when
// the text is not a JSON object or a field has the wrong type.
RunDescription parseRunDescription(const std::string& json);

}  // namespace distrun::train
