#include "distrun/plot/metrics_run.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/plot/input_file.h"

namespace distrun::plot {

namespace {

constexpr const char* kExpected =
    "expected the JSON `distrun train --metrics FILE` writes (an object with an \"epochs\" "
    "array)";

// parseMetricsEpochs's messages start so; the file's name replaces it.
std::string reasonOf(const DataError& e) {
  std::string message = e.what();
  const std::string prefix = "metrics history: ";
  if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
  return jsonReason(message);
}

}  // namespace

MetricsRun parseMetricsRun(const std::string& path, const std::string& json) {
  MetricsRun run;
  run.path = path;
  try {
    run.run = train::parseRunDescription(json);
    run.epochs = train::parseMetricsEpochs(json);
  } catch (const DataError& e) {
    if (json.find("\"traceEvents\"") != std::string::npos) {
      throw DataError(fmt::format(
          "metrics file {}: this is a trace (it has \"traceEvents\"), not a metrics file: draw "
          "it with distrun plot --trace {} -o FILE.png",
          path, path));
    }
    throw DataError(fmt::format("metrics file {}: {}: {}", path, kExpected, reasonOf(e)));
  }
  if (run.epochs.empty()) {
    throw DataError(fmt::format(
        "metrics file {}: holds no epoch yet (it gains one as each epoch ends): plot it "
        "after the first epoch",
        path));
  }
  return run;
}

MetricsRun readMetricsRun(const std::string& path) {
  const std::string text =
      readInputFile(path, "metrics file " + path, "the file `distrun train --metrics FILE` wrote");
  return parseMetricsRun(path, text);
}

std::vector<double> waitShares(const train::EpochMetrics& epoch, size_t ranks) {
  std::vector<double> shares(ranks, std::numeric_limits<double>::quiet_NaN());
  if (epoch.seconds <= 0) return shares;
  for (size_t r = 0; r < std::min(ranks, epoch.syncSeconds.size()); ++r) {
    shares[r] = epoch.syncSeconds[r] / epoch.seconds * 100;
  }
  return shares;
}

size_t ranksWithWaits(const MetricsRun& run) {
  size_t ranks = 0;
  for (const train::EpochMetrics& e : run.epochs) ranks = std::max(ranks, e.syncSeconds.size());
  return ranks;
}

std::string describeRun(const train::RunDescription& run) {
  std::string text = run.workload.empty() ? run.runtime : run.workload + ", " + run.runtime;
  text += fmt::format(", {} rank{} x {} thread{}", run.worldSize, run.worldSize == 1 ? "" : "s",
                      run.threadsPerRank, run.threadsPerRank == 1 ? "" : "s");
  if (run.batchSize > 0) text += fmt::format(", batch {} per rank", run.batchSize);
  return text;
}

}  // namespace distrun::plot
