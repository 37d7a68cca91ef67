#pragma once

// The figure of one training run, or two side by side: a gnuplot script
// (docs/observability.md, "Plots"). Pure functions of their inputs.
#include <string>
#include <vector>

#include "distrun/plot/image_output.h"
#include "distrun/plot/metrics_run.h"

namespace distrun::plot {

// What a metrics figure is drawn at unless --size says otherwise.
inline constexpr ImageSize kMetricsFigureSize{1200, 800};

// Ranks a wait panel draws one line each for (of one run; of each of two
// compared runs); above, the most, median and least waiting rank of each
// epoch.
inline constexpr size_t kRanksDrawnEach = 8;
inline constexpr size_t kComparedRanksDrawnEach = 4;

// The names the legend gives `runs` (one or two): their runtimes when
// those differ ("distrun", "pytorch"), else their files' names, else their
// paths.
std::vector<std::string> legendNames(const std::vector<MetricsRun>& runs);

// The gnuplot script drawing `runs` (one, or two overlaid with --compare)
// in four panels: train and test loss per epoch, test accuracy, samples/s,
// and each rank's share of the epoch spent waiting for its averaged
// gradients. A panel with nothing to draw (no test set; a file without
// waits) says so instead. The script sets no output: the image comes on
// gnuplot's standard output.
std::string metricsFigureScript(const std::vector<MetricsRun>& runs, ImageFormat format,
                                ImageSize size);

}  // namespace distrun::plot
