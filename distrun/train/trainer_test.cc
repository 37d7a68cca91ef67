#include "distrun/train/trainer.h"

#include <array>

#include <gtest/gtest.h>

#include "distrun/train/trainer_testing.h"

namespace distrun::train {
namespace {

using namespace trainer_testing;  // NOLINT: the fixture and its helpers

TEST_F(TrainerTest, LossFallsAndMetricsFileHasEveryEpoch) {
  const Outcome o = train(options(3));
  ASSERT_EQ(o.error, "");
  ASSERT_EQ(o.ran.size(), 3u);
  EXPECT_LT(o.ran[2].trainLoss, o.ran[0].trainLoss);
  std::ifstream in(dir_ + "/metrics.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["workload"], "linear");
  EXPECT_EQ(doc["runtime"], "distrun");
  EXPECT_EQ(doc["world_size"], 1);
  EXPECT_EQ(doc["batch_size"], 32);
  ASSERT_EQ(doc["epochs"].size(), 3u);
  EXPECT_EQ(doc["epochs"][2]["epoch"], 3);
  EXPECT_TRUE(doc["epochs"][2]["test_accuracy"].is_null());
  EXPECT_GT(doc["epochs"][2]["samples_per_second"].get<double>(), 0);
  ASSERT_EQ(doc["epochs"][2]["sync_seconds"].size(), 1u);  // one per rank
  EXPECT_GE(doc["epochs"][2]["sync_seconds"][0].get<double>(), 0);
}

// Rank 0 writes the snapshot and the metrics: it checks both before the
// first step, and every rank stops with its error (IoError, exit 74), the
// others naming rank 0; nothing is written.
TEST_F(TrainerTest, AnUnwritableOutputFileStopsEveryRankBeforeTheFirstStep) {
  std::ofstream(dir_ + "/file") << "x";
  TrainerOptions o = options(1);
  o.snapshotPath = dir_ + "/missing/linear.snap";
  const std::string snapshot = "--snapshot " + dir_ + "/missing/linear.snap: the folder " + dir_ +
                               "/missing does not exist: create it, or choose another path";
  EXPECT_EQ(trainRanks(2, o).errors, (std::vector<std::string>{snapshot, "rank 0: " + snapshot}));
  o = options(1);
  o.metricsPath = dir_ + "/file/m.json";
  const std::string metrics = "--metrics " + dir_ + "/file/m.json: " + dir_ +
                              "/file is not a folder: choose a path in a folder";
  EXPECT_EQ(trainRanks(2, o).errors, (std::vector<std::string>{metrics, "rank 0: " + metrics}));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/linear.snap"));

  // Rank 1 has printed its line before rank 0 ends (main prints rank 0's):
  // a launcher that stops rank 1 then cannot silence it.
  std::vector<ExitCode> codes(2, ExitCode::kSuccess);
  std::vector<std::string> printed(2);
  std::array<bool, 2> reported{};  // not vector<bool>: its bits share words between threads
  runGlooThreads(2, [&](Communicator& comm) {
    Workload w = buildWorkload("linear", {});
    std::ostringstream out, err;
    Trainer trainer(w.task(), comm, o, out, err);
    const auto rank = static_cast<size_t>(comm.rank());
    try {
      trainer.run();
    } catch (const Error& e) {
      codes[rank] = e.exitCode();
      reported[rank] = dynamic_cast<const ReportedError*>(&e) != nullptr;
    }
    printed[rank] = err.str();
  });
  EXPECT_EQ(codes, (std::vector<ExitCode>{ExitCode::kIo, ExitCode::kIo}));
  EXPECT_EQ(reported, (std::array<bool, 2>{false, true}));
  EXPECT_EQ(printed, (std::vector<std::string>{"", "distrun: error: rank 0: " + metrics + "\n"}));
}

// The free space a snapshot must find: the model three times over (model,
// optimizer state as large as Adam's) and 1 MiB.
TEST_F(TrainerTest, ASnapshotNeedsThreeTimesTheModelAndAMebibyte) {
  runGlooThreads(1, [&](Communicator& comm) {
    Workload w = buildWorkload("linear", {});
    TrainingTask task = w.task();
    uint64_t model = 0;
    for (const torch::Tensor& t : task.model.parameters()) model += t.nbytes();
    for (const torch::Tensor& t : task.model.buffers()) model += t.nbytes();
    std::ostringstream out, err;
    Trainer trainer(task, comm, options(1), out, err);
    EXPECT_EQ(trainer.snapshotBytesNeeded(), 3 * model + (1u << 20));
  });
}

// The library's words: the TrainerOptions field, not distrun-train's flag
// (train_flags_test.cc has the flags' side).
TEST_F(TrainerTest, BadOptionsAreUsageErrorsNamingTheOption) {
  TrainerOptions o = options(0);
  EXPECT_EQ(train(o).error, "TrainerOptions::epochs must be at least 1, got 0");
  o = options(1);
  o.batchSize = 0;
  EXPECT_EQ(train(o).error, "TrainerOptions::batchSize must be at least 1, got 0");
  o = options(1);
  o.saveEveryEpochs = -2;
  EXPECT_EQ(train(o).error, "TrainerOptions::saveEveryEpochs must be 0 (never) or more, got -2");
  o = options(1);
  o.saveEverySteps = -1;
  EXPECT_EQ(train(o).error, "TrainerOptions::saveEverySteps must be 0 (never) or more, got -1");
  o = options(1);
  o.checkpointCheckEvery = 0;
  EXPECT_EQ(train(o).error, "TrainerOptions::checkpointCheckEvery must be at least 1, got 0");
}

// Two ranks (threads) train `linear` from the same fixed weights; rank 1's
// forward sleeps 200 us per sample, a CPU far slower. Returns rank 0's
// trained weight and bias and the samples each rank trained on.
struct TwoRankRun {
  torch::Tensor parameters;
  std::vector<int64_t> samplesSeen = {0, 0};
  std::string error;
};

TwoRankRun trainTwoRanksWithASlowOne(bool balanceLoad) {
  TwoRankRun run;
  const std::vector<std::string> errors = runGlooThreads(2, [&](Communicator& comm) {
    Workload w = buildWorkload("linear", {});
    {
      torch::NoGradGuard noGrad;
      for (torch::Tensor& p : w.model->parameters()) p.fill_(0.01);
    }
    TrainingTask task = w.task();
    const auto rank = static_cast<size_t>(comm.rank());
    task.forward = [&, forward = task.forward, rank](const torch::Tensor& x) {
      run.samplesSeen[rank] += x.size(0);
      if (rank == 1) std::this_thread::sleep_for(std::chrono::microseconds(200) * x.size(0));
      return forward(x);
    };
    TrainerOptions o;
    o.epochs = 2;
    o.batchSize = 32;
    o.progress = ProgressStyle::kNone;
    o.balanceLoad = balanceLoad;
    std::ostringstream out, err;
    Trainer trainer(task, comm, o, out, err);
    trainer.run();
    if (comm.rank() == 0)
      run.parameters =
          torch::cat({w.model->parameters()[0].flatten(), w.model->parameters()[1].flatten()});
  });
  run.error = errors[0] + errors[1];
  return run;
}

// The slow rank gets fewer samples, every sample of each step is trained
// on once, and the model is the one of equal batches up to the order of
// floating-point sums (the replicas are bitwise equal: run() checks).
TEST(BalancedTrainerTest, TheSlowRankGetsFewerSamplesAndTheModelIsTheSame) {
  const TwoRankRun equal = trainTwoRanksWithASlowOne(false);
  const TwoRankRun balanced = trainTwoRanksWithASlowOne(true);
  ASSERT_EQ(equal.error, "");
  ASSERT_EQ(balanced.error, "");
  EXPECT_EQ(equal.samplesSeen, (std::vector<int64_t>{2048, 2048}));
  EXPECT_EQ(balanced.samplesSeen[0] + balanced.samplesSeen[1], 2 * 2048);
  EXPECT_LT(balanced.samplesSeen[1], balanced.samplesSeen[0] - 2 * 64);
  EXPECT_TRUE(torch::allclose(balanced.parameters, equal.parameters, /*rtol=*/1e-5, /*atol=*/1e-6))
      << balanced.parameters << "\n"
      << equal.parameters;
  EXPECT_FALSE(torch::equal(balanced.parameters, torch::full_like(equal.parameters, 0.01)));
}

TEST(MetricsTest, JsonRoundTripsAndEpochLineReads) {
  EpochMetrics m{.epoch = 2,
                 .trainLoss = 0.25,
                 .testLoss = 0.125,
                 .testAccuracy = 0.9755,
                 .samplesPerSecond = 1234.4,
                 .seconds = 6.48,
                 .syncSeconds = {0.5, 0.25}};
  const std::vector<EpochMetrics> back =
      parseMetricsEpochs(metricsJson({.workload = "mnist"}, {m}));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].testAccuracy, m.testAccuracy);
  EXPECT_EQ(back[0].syncSeconds, m.syncSeconds);
  EXPECT_EQ(epochLine(m, 3),
            "epoch 2/3  loss 0.2500  test loss 0.1250  accuracy 97.55%  1234 samples/s  6.5 s");
}

// A snapshot's history from before sync_seconds was recorded.
TEST(MetricsTest, HistoryWithoutSyncSecondsReads) {
  const std::vector<EpochMetrics> back = parseMetricsEpochs(
      R"({"epochs": [{"epoch": 1, "train_loss": 0.5, "test_loss": null, "test_accuracy": null,
                      "samples_per_second": 100, "seconds": 2}]})");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].seconds, 2);
  EXPECT_TRUE(back[0].syncSeconds.empty());
}

TEST(ProgressTest, UnknownStyleIsAUsageError) {
  try {
    parseProgressStyle("fancy");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "progress style 'fancy': expected auto, bar, epochs or none");
  }
}

TEST(WorkloadTest, UnknownWorkloadIsAUsageError) {
  try {
    buildWorkload("resnet", {});
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "workload 'resnet': expected mnist or linear");
  }
}

}  // namespace
}  // namespace distrun::train
