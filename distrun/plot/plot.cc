#include "distrun/plot/plot.h"

#include <ostream>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/writable_file.h"
#include "distrun/plot/metrics_figure.h"
#include "distrun/plot/timeline_figure.h"

namespace distrun::plot {

namespace {

void checkInputs(const PlotRequest& r) {
  if (!r.trace.empty() && r.compare) {
    throw UsageError("--trace with --compare: draw one trace, or compare two metrics files");
  }
  if (!r.trace.empty() && !r.metrics.empty()) {
    throw UsageError(
        fmt::format("--trace {}: a trace is drawn alone: leave out the metrics file {}", r.trace,
                    r.metrics.front()));
  }
  if (r.compare && r.metrics.size() != 2) {
    throw UsageError(
        fmt::format("--compare: expected two metrics files (--compare A.json B.json), got {}",
                    r.metrics.size()));
  }
  if (!r.compare && r.metrics.size() > 1) {
    throw UsageError(fmt::format(
        "plot: {} metrics files given: plot one, or compare two with --compare A.json B.json",
        r.metrics.size()));
  }
  if (r.trace.empty() && r.metrics.empty()) {
    throw UsageError(
        "plot: expected a metrics file: distrun plot METRICS.json -o FILE.png|svg (or --compare "
        "A.json B.json, or --trace TRACE.json)");
  }
}

void checkWindow(const PlotRequest& r) {
  if (r.trace.empty() && (r.fromMs || r.toMs)) {
    throw UsageError(
        fmt::format("{}: only with --trace (a window of the timeline, in milliseconds)",
                    r.fromMs ? "--from" : "--to"));
  }
  if (r.fromMs && *r.fromMs < 0) {
    throw UsageError(fmt::format(
        "--from {:g}: expected 0 or more milliseconds from the trace's first span", *r.fromMs));
  }
  if (r.toMs && *r.toMs <= r.fromMs.value_or(0)) {
    throw UsageError(fmt::format(
        "--from {:g} --to {:g}: expected FROM below TO (milliseconds from the trace's first span)",
        r.fromMs.value_or(0), *r.toMs));
  }
}

void drawMetrics(const PlotRequest& r, ImageFormat format, const GnuplotTool& run,
                 ImageSize& size) {
  std::vector<MetricsRun> runs;
  for (const std::string& path : r.metrics) runs.push_back(readMetricsRun(path));
  if (r.size.empty()) size = kMetricsFigureSize;
  renderImage(metricsFigureScript(runs, format, size), r.output, run);
}

// --from and --to as given.
std::string windowFlags(const PlotRequest& r) {
  std::string flags = r.fromMs ? fmt::format("--from {:g}", *r.fromMs) : "";
  if (r.toMs) flags += fmt::format("{}--to {:g}", flags.empty() ? "" : " ", *r.toMs);
  return flags;
}

Timeline windowOf(const Timeline& timeline, const PlotRequest& r) {
  if (!r.fromMs && !r.toMs) return timeline;
  Timeline cut = window(timeline, r.fromMs.value_or(0), r.toMs.value_or(timeline.endMs));
  if (cut.spans.empty()) {
    throw UsageError(
        fmt::format("{}: no span of trace {} lies in this window (its spans cover 0 to {:g} ms)",
                    windowFlags(r), r.trace, timeline.endMs));
  }
  return cut;
}

void drawTrace(const PlotRequest& r, ImageFormat format, const GnuplotTool& run, ImageSize& size) {
  const Timeline whole = readTimeline(r.trace);
  const Timeline timeline = windowOf(whole, r);
  const double from = r.fromMs.value_or(0);
  const double to = r.toMs.value_or(whole.endMs);
  if (r.size.empty()) size = timelineSize(timeline.lanes.size());
  renderImage(timelineFigureScript(timeline, from, std::max(to, from + 1e-3), format, size),
              r.output, run);
}

}  // namespace

void checkPlotRequest(const PlotRequest& request) {
  checkInputs(request);
  checkWindow(request);
  if (request.output.empty()) {
    throw UsageError("plot: -o FILE is required: the image to write (FILE.png or FILE.svg)");
  }
}

void runPlot(const PlotRequest& request, const GnuplotTool& run, std::ostream& out) {
  checkPlotRequest(request);
  const ImageFormat format = imageFormatFor(request.output);
  ImageSize size = request.size.empty() ? ImageSize{} : parseImageSize(request.size);
  checkFileWritable(request.output, "-o", 0);
  if (request.trace.empty()) {
    drawMetrics(request, format, run, size);
  } else {
    drawTrace(request, format, run, size);
  }
  out << fmt::format("wrote {} ({}x{})\n", request.output, size.width, size.height);
}

}  // namespace distrun::plot
