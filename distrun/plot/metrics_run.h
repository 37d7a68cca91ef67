#pragma once

// A training run as its metrics file (`distrun train --metrics FILE`, or
// bench/peers/torch_ddp_train.py's) describes it, for plotting.
#include <string>
#include <vector>

#include "distrun/train/metrics.h"

namespace distrun::plot {

struct MetricsRun {
  std::string path;                         // the file it was read from
  train::RunDescription run;                // workload, runtime, ranks, ...
  std::vector<train::EpochMetrics> epochs;  // at least one
};

// Reads and checks the metrics file at `path`. Throws Error kNoInput (66)
// when it is missing, IoError (74) when unreadable, DataError (65) naming
// the file and what was expected when it is not a metrics file or holds
// no epoch yet.
MetricsRun readMetricsRun(const std::string& path);

// The same, from the file's text (`path` names it in errors).
MetricsRun parseMetricsRun(const std::string& path, const std::string& json);

// Each rank's share of the epoch spent waiting for its averaged gradients,
// in per cent (syncSeconds[r] / seconds * 100); NaN where not recorded.
// `ranks` values: a history may record fewer ranks than `ranks`.
std::vector<double> waitShares(const train::EpochMetrics& epoch, size_t ranks);

// The most ranks any epoch of `run` recorded a wait for (0: none did, as in
// a PyTorch run's file).
size_t ranksWithWaits(const MetricsRun& run);

// "mnist, distrun, 2 ranks x 1 thread, batch 64 per rank": the run in words.
std::string describeRun(const train::RunDescription& run);

}  // namespace distrun::plot
