#pragma once

// `distrun plot`: pictures of a run's metrics, of two runs side by side,
// and of a merged trace (docs/observability.md, "Plots"). The command line
// (distrun/cli/plot_command.cc) fills a PlotRequest; runPlot does the rest.
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "distrun/plot/image_output.h"

namespace distrun::plot {

struct PlotRequest {
  std::vector<std::string> metrics;  // METRICS.json; A.json B.json with --compare
  bool compare = false;
  std::string trace;                   // --trace TRACE.json
  std::string output;                  // -o FILE.png|svg
  std::string size;                    // --size WxH; "": the figure's own
  std::optional<double> fromMs, toMs;  // --from, --to: the trace's window
};

// The mistakes found from the request alone: one UsageError (64) naming
// the flag or argument and what was expected.
void checkPlotRequest(const PlotRequest& request);

// Checks the request (above, and -o's format and folder: IoError 74 when it
// cannot be written), reads its inputs (kNoInput 66, DataError 65, see
// readMetricsRun and readTimeline), draws the figure with gnuplot through
// `run` and writes it to request.output atomically (renderImage: 127 when
// gnuplot is missing, 74 when it fails). Prints "wrote FILE (WxH)" to
// `out`.
void runPlot(const PlotRequest& request, const GnuplotTool& run, std::ostream& out);

}  // namespace distrun::plot
