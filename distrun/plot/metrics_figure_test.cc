#include "distrun/plot/metrics_figure.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/plot/plot_testing.h"

namespace distrun::plot {
namespace {

using testing::errorOf;
using ::testing::HasSubstr;
using ::testing::Not;

MetricsRun runOf(const std::string& path, const std::string& text) {
  return parseMetricsRun(path, text);
}

TEST(MetricsRunTest, ReadsTheRunAndItsEpochs) {
  const MetricsRun run = runOf("m.json", testing::metricsText(3, 2, true));
  EXPECT_EQ(run.path, "m.json");
  EXPECT_EQ(run.run.workload, "mnist");
  EXPECT_EQ(run.run.worldSize, 2);
  ASSERT_EQ(run.epochs.size(), 3u);
  EXPECT_DOUBLE_EQ(*run.epochs[1].testAccuracy, 0.92);
  EXPECT_EQ(describeRun(run.run), "mnist, distrun, 2 ranks x 1 thread, batch 64 per rank");
}

// PyTorch's side of bench/train.sh writes no sync_seconds.
TEST(MetricsRunTest, AFileWithoutWaitsHasNoRanksWithWaits) {
  const MetricsRun run =
      runOf("p.json",
            R"({"workload": "linear", "runtime": "pytorch", "world_size": 2, "batch_size": 32,
          "threads_per_rank": 1, "epochs": [{"epoch": 1, "train_loss": 0.5, "test_loss": null,
          "test_accuracy": null, "samples_per_second": 900.0, "seconds": 1.5}]})");
  EXPECT_EQ(ranksWithWaits(run), 0u);
  EXPECT_EQ(describeRun(run.run), "linear, pytorch, 2 ranks x 1 thread, batch 32 per rank");
}

TEST(MetricsRunTest, WaitSharesArePerCentOfTheEpoch) {
  train::EpochMetrics e;
  e.seconds = 2.0;
  e.syncSeconds = {0.5, 0.1};
  const std::vector<double> shares = waitShares(e, 3);
  EXPECT_DOUBLE_EQ(shares[0], 25.0);
  EXPECT_DOUBLE_EQ(shares[1], 5.0);
  EXPECT_TRUE(std::isnan(shares[2]));
  e.seconds = 0;
  EXPECT_TRUE(std::isnan(waitShares(e, 2)[0]));
}

const std::string kExpected =
    "metrics file bad.json: expected the JSON `distrun train --metrics FILE` writes (an object "
    "with an \"epochs\" array): ";

TEST(MetricsRunTest, AFileThatIsNotJsonIsADataErrorNamingIt) {
  EXPECT_EQ(errorOf([] { runOf("bad.json", "epoch 1 loss 0.5"); }),
            std::make_pair(kExpected + "parse error at line 1, column 1: syntax error while "
                                       "parsing value - invalid literal; last read: 'e'",
                           ExitCode::kData));
}

TEST(MetricsRunTest, JsonOfAnotherShapeIsADataErrorNamingIt) {
  EXPECT_EQ(errorOf([] { runOf("bad.json", R"({"workload": "mnist"})"); }),
            std::make_pair(kExpected + "key 'epochs' not found", ExitCode::kData));
  EXPECT_EQ(errorOf([] { runOf("bad.json", R"({"epochs": [{"epoch": "one"}]})"); }),
            std::make_pair(kExpected + "type must be number, but is string", ExitCode::kData));
  EXPECT_EQ(errorOf([] { runOf("bad.json", R"({"world_size": "two", "epochs": []})"); }),
            std::make_pair(kExpected + "type must be number, but is string", ExitCode::kData));
}

TEST(MetricsRunTest, NoEpochYetIsADataError) {
  EXPECT_EQ(errorOf([] { runOf("m.json", R"({"workload": "mnist", "epochs": []})"); }),
            std::make_pair(std::string("metrics file m.json: holds no epoch yet (it gains one as "
                                       "each epoch ends): plot it after the first epoch"),
                           ExitCode::kData));
}

TEST(MetricsRunTest, AMissingFileIsNoInput) {
  EXPECT_EQ(errorOf([] { readMetricsRun("/nonexistent-distrun/m.json"); }),
            std::make_pair(std::string("metrics file /nonexistent-distrun/m.json: cannot open: "
                                       "No such file or directory: give the file `distrun train "
                                       "--metrics FILE` wrote"),
                           ExitCode::kNoInput));
  EXPECT_EQ(errorOf([] { readMetricsRun("/"); }),
            std::make_pair(std::string("metrics file /: it is a folder: give the file `distrun "
                                       "train --metrics FILE` wrote"),
                           ExitCode::kNoInput));
}

TEST(LegendNamesTest, RuntimesThenFileNamesThenPaths) {
  const std::string d = testing::metricsText(1, 2, false);
  const std::string p = testing::metricsText(1, 2, false, "pytorch");
  EXPECT_EQ(legendNames({runOf("a/m.json", d), runOf("b/m.json", p)}),
            (std::vector<std::string>{"distrun", "pytorch"}));
  EXPECT_EQ(legendNames({runOf("a/one.json", d), runOf("a/two.json", d)}),
            (std::vector<std::string>{"one.json", "two.json"}));
  EXPECT_EQ(legendNames({runOf("a/m.json", d), runOf("b/m.json", d)}),
            (std::vector<std::string>{"a/m.json", "b/m.json"}));
}

std::string scriptOf(const std::vector<MetricsRun>& runs) {
  return metricsFigureScript(runs, ImageFormat::kPng, kMetricsFigureSize);
}

TEST(MetricsFigureTest, HoldsEachEpochAndFourPanels) {
  const std::string script = scriptOf({runOf("m.json", testing::metricsText(2, 2, true))});
  // epoch, train loss, test loss, accuracy %, samples/s, rank 0's and 1's wait %
  EXPECT_THAT(script, HasSubstr("$run0 << EOD\n1 1 1.2 91 1001 5 10\n2 0.5 0.6 92 1002 5 10\n"));
  EXPECT_THAT(script, HasSubstr("set multiplot layout 2,2 title 'm.json: mnist, distrun, 2 "
                                "ranks x 1 thread, batch 64 per rank'"));
  EXPECT_THAT(script, HasSubstr("set xrange [0.5:2.5]\nset xtics 1 "));
  for (const char* title : {"'loss per epoch'", "'test accuracy'", "'training throughput'",
                            "'waiting for averaged gradients'", "title 'rank 1'"}) {
    EXPECT_THAT(script, HasSubstr(title));
  }
  EXPECT_THAT(script, Not(HasSubstr("set output")));
}

TEST(MetricsFigureTest, APanelWithNothingToDrawSaysSo) {
  const std::string script =
      scriptOf({runOf("p.json", testing::metricsText(1, 2, false, "pytorch"))});
  EXPECT_THAT(script, HasSubstr("'no test set was evaluated'"));
  EXPECT_THAT(script, HasSubstr("'not recorded in this metrics file'"));
  EXPECT_THAT(script, Not(HasSubstr("using 1:3 ")));  // no test loss series
}

TEST(MetricsFigureTest, ManyRanksAreDrawnAsTheMostMedianAndLeastWaiting) {
  const std::string script = scriptOf({runOf("m.json", testing::metricsText(1, 9, true))});
  EXPECT_THAT(script, HasSubstr("1 1 1.2 91 1001 45 25 5\n"));
  EXPECT_THAT(script, HasSubstr("'least waiting rank (the slowest)'"));
  EXPECT_THAT(script, Not(HasSubstr("'rank 8'")));
}

TEST(MetricsFigureTest, ComparedRunsAreNamedInTheLegendAndTitle) {
  const std::string script =
      scriptOf({runOf("d.json", testing::metricsText(3, 2, true)),
                runOf("p.json", testing::metricsText(2, 2, true, "pytorch"))});
  EXPECT_THAT(script, HasSubstr("$run1 << EOD\n"));
  EXPECT_THAT(script, HasSubstr("title 'distrun train'"));
  EXPECT_THAT(script, HasSubstr("title 'pytorch test'"));
  EXPECT_THAT(script, HasSubstr("'distrun: mnist, distrun, 2 ranks x 1 thread, batch 64 per "
                                "rank (d.json)'.\"\\n\".'pytorch: "));
  EXPECT_THAT(script, HasSubstr("set xrange [0.5:3.5]"));
  EXPECT_THAT(script, HasSubstr("title 'pytorch: not recorded'"));
}

TEST(MetricsFigureTest, ComparedRunsDrawFewerRanksEach) {
  const std::string script = scriptOf({runOf("d.json", testing::metricsText(1, 5, true)),
                                       runOf("p.json", testing::metricsText(1, 4, true, "other"))});
  EXPECT_THAT(script, HasSubstr("title 'distrun most waiting rank'"));
  EXPECT_THAT(script, HasSubstr("title 'other rank 3'"));
}

}  // namespace
}  // namespace distrun::plot
