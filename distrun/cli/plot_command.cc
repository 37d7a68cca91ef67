// `distrun plot METRICS.json -o FILE.png|svg`, `--compare A.json B.json`,
// `--trace TRACE.json [--from MS --to MS]` (docs/observability.md, "Plots").
#include <memory>

#include "distrun/cli/commands.h"
#include "distrun/cli/flag_check.h"
#include "distrun/plot/plot.h"

namespace distrun::cli {

namespace {

// --from/--to as given: CLI11 fills a double, the request an optional.
struct PlotFlags {
  plot::PlotRequest request;
  double fromMs = 0, toMs = 0;
};

void addPlotFlags(CLI::App* cmd, PlotFlags& f) {
  cmd->add_option("-o,--output", f.request.output, "the image to write: FILE.png or FILE.svg");
  cmd->add_option("--size", f.request.size,
                  "WIDTHxHEIGHT in pixels (default 1200x800; a trace: 1600 wide, a height per "
                  "lane)");
  cmd->add_flag("--compare", f.request.compare, "overlay two runs: --compare A.json B.json");
  cmd->add_option("--trace", f.request.trace,
                  "draw a Chrome trace (distrun trace merge's) as a timeline instead");
  cmd->add_option("--from", f.fromMs, "--trace: start of the window, ms from the first span");
  cmd->add_option("--to", f.toMs, "--trace: end of the window, ms from the first span");
}

}  // namespace

Action addPlotCommand(CLI::App& app, CliContext& ctx) {
  auto flags = std::make_shared<PlotFlags>();
  CLI::App* cmd = app.add_subcommand(
      "plot",
      "Draw a run's metrics (distrun train --metrics FILE) as one figure: loss, test accuracy, "
      "samples/s and each rank's wait for gradients per epoch; two runs with --compare; a "
      "merged trace with --trace");
  addPlotFlags(cmd, *flags);
  // METRICS files are what the parser leaves: an unknown flag among them
  // is refused by name (argumentsWithoutFlags).
  cmd->allow_extras();
  cmd->footer(
      "distrun plot METRICS.json -o FILE.png|svg\n"
      "distrun plot --compare A.json B.json -o FILE.png|svg\n"
      "distrun plot --trace TRACE.json -o FILE.png|svg [--from MS] [--to MS]\n"
      "(docs/observability.md, \"Plots\")");
  return [flags, cmd, &ctx] {
    plot::PlotRequest& r = flags->request;
    r.metrics = argumentsWithoutFlags(*cmd);
    if (cmd->count("--from") > 0) r.fromMs = flags->fromMs;
    if (cmd->count("--to") > 0) r.toMs = flags->toMs;
    plot::runPlot(r, ctx.runTool, ctx.out);
    return 0;
  };
}

}  // namespace distrun::cli
