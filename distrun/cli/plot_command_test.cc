// `distrun plot`: the command line reaches gnuplot whole (the mistakes are
// in mistakes_test.cc; the figures in distrun/plot). gnuplot is a fake here
// that answers with a few bytes, which become the image.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cli/cli.h"
#include "distrun/cli/source_paths_testing.h"
#include "distrun/common/environment.h"

namespace distrun::cli {
namespace {

using ::testing::HasSubstr;

using testing::kPlotData;

struct PlotRun {
  int operator()(const std::vector<std::string>& args) {
    CliContext ctx{.env = env,
                   .out = out,
                   .err = err,
                   .builtinSiteDir = "",
                   .exec = [](const auto&, const auto&) {},
                   .toolDir = "/opt/distrun/bin",
                   .runTool =
                       [this](const std::vector<std::string>& argv, const std::string& input) {
                         tool = argv;
                         script = input;
                         return ToolResult{0, "IMAGE", ""};
                       }};
    return runCli(args, ctx);
  }

  MapEnvironment env;
  std::ostringstream out, err;
  std::vector<std::string> tool;
  std::string script;
};

// The image file, removed at the end.
struct Output {
  std::string path = "/tmp/distrun-plot-command-" + std::to_string(::getpid()) + ".png";
  ~Output() { std::filesystem::remove(path); }
  std::string text() const {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

TEST(PlotCommandTest, ComparesTwoRunsThroughGnuplot) {
  PlotRun run;
  Output image;
  EXPECT_EQ(run({"plot", "--compare", kPlotData + "/linear_2ranks.json",
                 kPlotData + "/pytorch_linear_2ranks.json", "-o", image.path, "--size", "800x600"}),
            0)
      << run.err.str();
  EXPECT_EQ(run.tool, std::vector<std::string>{"gnuplot"});
  EXPECT_THAT(run.script, HasSubstr("set terminal pngcairo size 800,600 "));
  EXPECT_THAT(run.script, HasSubstr("title 'pytorch train'"));
  EXPECT_EQ(image.text(), "IMAGE");
  EXPECT_EQ(run.out.str(), "wrote " + image.path + " (800x600)\n");
  EXPECT_EQ(run.err.str(), "");
}

TEST(PlotCommandTest, DrawsAWindowOfATrace) {
  PlotRun run;
  Output image;
  EXPECT_EQ(run({"plot", "--trace", kPlotData + "/two_ranks_trace.json", "--from", "1", "--to",
                 "5.5", "-o", image.path}),
            0)
      << run.err.str();
  EXPECT_THAT(run.script, HasSubstr("set xrange [1:5.5]\n"));
  EXPECT_THAT(run.script, HasSubstr("'rank 1 (node1) / comm'"));
  EXPECT_EQ(image.text(), "IMAGE");
}

}  // namespace
}  // namespace distrun::cli
