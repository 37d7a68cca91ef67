// `distrun plot` end to end with the real gnuplot (skipped, saying so,
// where it is not installed): the image of the asked size, its format from
// the extension, nothing left behind.
#include "distrun/plot/plot.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/plot/plot_testing.h"

namespace distrun::plot {
namespace {

using testing::errorOf;
using ::testing::HasSubstr;

class PlotTest : public ::testing::Test {
 protected:
  void SetUp() override { DISTRUN_NEEDS_GNUPLOT(); }

  std::string metrics(const std::string& name, const std::string& text) {
    testing::writeText(tmp_.file(name), text);
    return tmp_.file(name);
  }
  static PlotRequest request(std::vector<std::string> metrics, const std::string& output,
                             const std::string& size = "") {
    PlotRequest r;
    r.metrics = std::move(metrics);
    r.output = output;
    r.size = size;
    return r;
  }
  // runPlot with the real gnuplot; what it printed.
  std::string plot(const PlotRequest& request) {
    std::ostringstream out;
    runPlot(request, runTool, out);
    return out.str();
  }

  testing::TempDir tmp_;
};

TEST_F(PlotTest, APngOfTheAskedSize) {
  const std::string m = metrics("m.json", testing::metricsText(3, 2, true));
  const std::string out = tmp_.file("fig.png");
  EXPECT_EQ(plot(request({m}, out, "640x480")), "wrote " + out + " (640x480)\n");
  EXPECT_EQ(testing::pngSize(out), std::make_pair(640u, 480u));
  EXPECT_EQ(tmp_.listing(), "fig.png m.json");
}

TEST_F(PlotTest, AnSvgOfTheAskedSize) {
  const std::string m = metrics("m.json", testing::metricsText(1, 1, false));
  const std::string out = tmp_.file("fig.svg");
  plot(request({m}, out, "700x500"));
  const std::string svg = testing::readText(out);
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("width=\"700\" height=\"500\""));
  EXPECT_THAT(svg, HasSubstr("no test set was evaluated"));
}

TEST_F(PlotTest, TwoRunsComparedAtTheDefaultSize) {
  const std::string a = metrics("a.json", testing::metricsText(3, 2, true));
  const std::string b = metrics("b.json", testing::metricsText(2, 2, true, "pytorch"));
  const std::string out = tmp_.file("ab.png");
  PlotRequest r = request({a, b}, out);
  r.compare = true;
  EXPECT_EQ(plot(r), "wrote " + out + " (1200x800)\n");
  EXPECT_EQ(testing::pngSize(out), std::make_pair(1200u, 800u));
}

TEST_F(PlotTest, ATraceAsATimeline) {
  const std::string trace = metrics("t.json", R"({"traceEvents": [
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "compute"}},
        {"ph": "X", "name": "step", "cat": "compute", "pid": 0, "tid": 1, "ts": 10, "dur": 900},
        {"ph": "X", "name": "forward", "cat": "compute", "pid": 0, "tid": 1, "ts": 20,
         "dur": 300},
        {"ph": "X", "name": "allreduce", "cat": "comm", "pid": 1, "tid": 2, "ts": 400,
         "dur": 100}]})");
  const std::string out = tmp_.file("timeline.png");
  PlotRequest r = request({}, out);
  r.trace = trace;
  EXPECT_EQ(plot(r), "wrote " + out + " (1600x400)\n");
  EXPECT_EQ(testing::pngSize(out), std::make_pair(1600u, 400u));
  r.size = "800x300";
  r.fromMs = 0.1;
  r.toMs = 0.5;
  plot(r);
  EXPECT_EQ(testing::pngSize(out), std::make_pair(800u, 300u));
  r.fromMs = 5;
  r.toMs = std::nullopt;
  EXPECT_EQ(errorOf([&] { plot(r); }),
            std::make_pair("--from 5: no span of trace " + trace +
                               " lies in this window (its spans cover 0 to 0.9 ms)",
                           ExitCode::kUsage));
}

// A malformed input is refused before gnuplot runs, and -o stays untouched.
TEST_F(PlotTest, AMalformedMetricsFileWritesNothing) {
  const std::string m = metrics("m.json", "{\"epochs\": [{\"epoch\": 1}]}");
  EXPECT_EQ(errorOf([&] { plot(request({m}, tmp_.file("fig.png"))); }),
            std::make_pair("metrics file " + m +
                               ": expected the JSON `distrun train --metrics FILE` writes (an "
                               "object with an \"epochs\" array): key 'train_loss' not found",
                           ExitCode::kData));
  EXPECT_EQ(tmp_.listing(), "m.json");
}

// gnuplot not on PATH: the package to install, exit 127, no file.
TEST_F(PlotTest, AMissingGnuplotNamesThePackage) {
  const std::string m = metrics("m.json", testing::metricsText(1, 1, true));
  const GnuplotTool noGnuplot = [](const std::vector<std::string>& argv, const std::string& in) {
    ToolRequest tool;
    tool.argv = argv;
    tool.input = in;
    tool.environment = std::map<std::string, std::string>{{"PATH", "/nonexistent"}};
    return runToolWithin(tool);
  };
  std::ostringstream out;
  const auto [message, code] =
      errorOf([&] { runPlot(request({m}, tmp_.file("f.png")), noGnuplot, out); });
  EXPECT_THAT(message, HasSubstr("install the Debian package gnuplot-nox"));
  EXPECT_EQ(code, ExitCode::kNotFound);
  EXPECT_EQ(tmp_.listing(), "m.json");
}

}  // namespace
}  // namespace distrun::plot
