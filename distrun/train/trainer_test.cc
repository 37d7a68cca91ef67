#include "distrun/train/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <torch/utils.h>
#include <nlohmann/json.hpp>

#include "distrun/comm/testing/contract.h"
#include "distrun/common/error.h"
#include "distrun/data/test_files.h"
#include "distrun/train/snapshot_file.h"
#include "distrun/train_app/workloads.h"

namespace distrun::train {
namespace {

using comm::Communicator;
using comm::testing::runGlooThreads;

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tmp_.path(); }

  TrainerOptions options(int64_t epochs) {
    TrainerOptions o;
    o.epochs = epochs;
    o.batchSize = 32;
    o.progress = ProgressStyle::kNone;
    o.snapshotPath = dir_ + "/linear.snap";
    o.metricsPath = dir_ + "/metrics.json";
    return o;
  }

  struct Outcome {
    std::vector<EpochMetrics> ran, history;
    uint32_t checksum = 0;
    int64_t startEpoch = 0, startStep = 0;
    std::string progress;  // rank 0's
    std::string error;
    std::vector<std::string> errors;  // every rank's
    std::optional<std::string> resumedFrom;
    std::optional<CheckpointStop> checkpointedAt;  // every rank's must be rank 0's
    std::string err;                               // rank 0's
  };

  // Trains the linear workload (fresh model from `seed`) as a world of one.
  Outcome train(const TrainerOptions& o, const std::string& name = "linear", uint64_t seed = 0) {
    return trainRanks(1, o, name, seed);
  }

  // The same on `ranks` ranks (threads); the outcome is rank 0's.
  // `requests`, when given, is each rank's checkpoint request flag.
  Outcome trainRanks(int ranks, const TrainerOptions& o, const std::string& name = "linear",
                     uint64_t seed = 0, std::vector<const std::atomic<bool>*> requests = {}) {
    Outcome outcome;
    std::vector<std::optional<CheckpointStop>> stops(static_cast<size_t>(ranks));
    // The ranks are threads of one process sharing LibTorch's default
    // generator: each seeds it and builds its model while holding this, so
    // that every rank gets the same model and no two draw from it at once.
    std::mutex generator;
    const std::vector<std::string> errors = runGlooThreads(ranks, [&](Communicator& comm) {
      Workload w = [&] {
        std::lock_guard<std::mutex> lock(generator);
        torch::manual_seed(seed);
        return buildWorkload("linear", {});
      }();
      TrainingTask task = w.task();
      task.name = name;
      std::ostringstream out, err;
      TrainerOptions mine = o;
      if (!requests.empty()) mine.checkpointRequest = requests[static_cast<size_t>(comm.rank())];
      Trainer trainer(task, comm, mine, out, err);
      std::vector<EpochMetrics> ran = trainer.run();
      stops[static_cast<size_t>(comm.rank())] = trainer.checkpointedAt();
      if (comm.rank() != 0) return;
      outcome.checkpointedAt = trainer.checkpointedAt();
      outcome.err = err.str();
      outcome.ran = std::move(ran);
      outcome.history = trainer.history();
      outcome.checksum = trainer.parameterChecksum();
      outcome.startEpoch = trainer.startEpoch();
      outcome.startStep = trainer.startStep();
      outcome.progress = out.str();
      outcome.resumedFrom = trainer.resumedFrom();
    });
    outcome.error = errors[0];
    outcome.errors = errors;
    for (const auto& stop : stops) {
      EXPECT_EQ(stop.has_value(), outcome.checkpointedAt.has_value()) << "the ranks disagree";
    }
    return outcome;
  }

  data::testing::TempDir tmp_;
  std::string dir_;
};

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

TEST_F(TrainerTest, ResumesAfterTheLastSnapshotedEpoch) {
  ASSERT_EQ(train(options(2)).error, "");
  const Outcome resumed = train(options(4), "linear", /*seed=*/99);
  ASSERT_EQ(resumed.error, "");
  EXPECT_EQ(resumed.startEpoch, 2);
  EXPECT_EQ(resumed.ran.size(), 2u);
  EXPECT_EQ(resumed.history.size(), 4u);  // the metrics keep the first run's epochs
}

TEST_F(TrainerTest, ResumingMidEpochEndsBitwiseEqualToAnUninterruptedRun) {
  TrainerOptions straight = options(3);
  straight.snapshotPath.clear();
  const Outcome uninterrupted = train(straight);
  ASSERT_EQ(uninterrupted.error, "");

  TrainerOptions firstPart = options(1);  // 64 steps; the last snapshot is at step 60
  firstPart.saveEveryEpochs = 0;
  firstPart.saveEverySteps = 5;
  ASSERT_EQ(train(firstPart).error, "");
  const Outcome rest = train(options(3), "linear", /*seed=*/7);
  ASSERT_EQ(rest.error, "");
  EXPECT_EQ(rest.startEpoch, 0);
  EXPECT_EQ(rest.startStep, 60);
  EXPECT_EQ(rest.checksum, uninterrupted.checksum);
  EXPECT_EQ(rest.history.back().trainLoss, uninterrupted.history.back().trainLoss);
}

// SIGUSR1 seen by rank 1 only: both ranks stop at the same step, rank 0's
// snapshot is there, and the run resumes from it to its end. (Bitwise
// equality with an uninterrupted run is checked with real processes, in
// train_process_test and submit_slurm_test: here the two ranks are threads
// of one process, and comparing their checksums across runs failed about
// one run in three under load.)
TEST_F(TrainerTest, ACheckpointRequestOnOneRankStopsEveryRankAndTheRunResumes) {
  ASSERT_EQ(trainRanks(2, options(1)).error, "");  // a snapshot at epoch 1's end
  std::atomic<bool> unset{false}, set{true};
  const Outcome stopped = trainRanks(2, options(3), "linear", 5, {&unset, &set});
  ASSERT_EQ(stopped.error, "");
  ASSERT_TRUE(stopped.checkpointedAt.has_value());
  EXPECT_EQ(stopped.checkpointedAt->epoch, 1);
  EXPECT_EQ(stopped.checkpointedAt->step, 0);
  EXPECT_TRUE(stopped.ran.empty());

  const Outcome rest = trainRanks(2, options(3), "linear", 7, {&unset, &unset});
  ASSERT_EQ(rest.error, "");
  EXPECT_FALSE(rest.checkpointedAt.has_value());
  EXPECT_EQ(rest.startEpoch, 1);
  EXPECT_EQ(rest.ran.size(), 2u);
}

// Without a snapshot path nothing can be saved: one line, and the run goes on.
TEST_F(TrainerTest, ACheckpointRequestWithoutASnapshotPathTrainsOn) {
  TrainerOptions o = options(2);
  o.snapshotPath.clear();
  std::atomic<bool> set{true};
  const Outcome outcome = trainRanks(2, o, "linear", 0, {&set, &set});
  ASSERT_EQ(outcome.error, "");
  EXPECT_FALSE(outcome.checkpointedAt.has_value());
  EXPECT_EQ(outcome.ran.size(), 2u);
  EXPECT_EQ(outcome.err,
            "distrun-train: SIGUSR1: no --snapshot, so nothing can be saved: training goes on (the "
            "job will end at its time limit and not be requeued)\n");
}

TEST_F(TrainerTest, SnapshotOfAnotherWorkloadIsRefused) {
  ASSERT_EQ(train(options(1), "other").error, "");
  EXPECT_EQ(train(options(2)).error,
            "snapshot " + dir_ +
                "/linear.snap was written by a 'other' run, this is a "
                "'linear' run: resume with the same workload, or delete it to start afresh");
}

// A job resubmitted on more or fewer ranks goes on from the epoch its
// snapshot ended: the new world's shards of the next epoch, the same model.
TEST_F(TrainerTest, ResumesOnAnotherWorldSizeFromAnEpochsEnd) {
  ASSERT_EQ(trainRanks(2, options(1)).error, "");
  TrainerOptions o = options(2);
  o.progress = ProgressStyle::kEpochs;
  const Outcome three = trainRanks(3, o, "linear", /*seed=*/99);
  ASSERT_EQ(three.error, "");  // Trainer::run checks the replicas are equal
  EXPECT_EQ(three.startEpoch, 1);
  EXPECT_EQ(three.ran.size(), 1u);
  EXPECT_EQ(three.history.size(), 2u);
  EXPECT_NE(three.progress.find("(written by 2 ranks, now 3)"), std::string::npos)
      << three.progress;

  const Outcome one = train(options(3), "linear", /*seed=*/5);
  ASSERT_EQ(one.error, "");
  EXPECT_EQ(one.startEpoch, 2);
  EXPECT_EQ(one.history.size(), 3u);
  EXPECT_LT(one.history[2].trainLoss, one.history[0].trainLoss);
}

TEST_F(TrainerTest, MidEpochSnapshotOfAnotherWorldSizeIsRefused) {
  TrainerOptions o = options(1);  // 2 ranks: 32 steps; the last snapshot is at step 30
  o.saveEveryEpochs = 0;
  o.saveEverySteps = 10;
  ASSERT_EQ(trainRanks(2, o).error, "");
  EXPECT_EQ(train(options(2)).error,
            "snapshot " + dir_ +
                "/linear.snap was written by a 2-rank run at step 30 of epoch 1, "
                "this is a 1-rank run: another world size resumes only from a "
                "snapshot at an epoch's end; resume with 2 ranks, or delete it to "
                "start afresh");
}

TEST_F(TrainerTest, CorruptSnapshotWithoutAPreviousOneStopsTheRun) {
  std::ofstream(dir_ + "/linear.snap") << "not a snapshot";
  EXPECT_EQ(train(options(1)).error,
            "snapshot " + dir_ +
                "/linear.snap is not a distrun snapshot: expected it to start "
                "with 'DRSNAP1' and a 20-byte header, and there is no previous snapshot " +
                dir_ + "/linear.snap.prev: delete " + dir_ + "/linear.snap to start afresh");
}

TEST_F(TrainerTest, SnapshotThatIsNoTrainingStateIsADataError) {
  writeSnapshotFile(dir_ + "/linear.snap", "checksummed, but not an archive");
  const std::string error = train(options(1)).error;
  EXPECT_EQ(error.rfind("snapshot " + dir_ + "/linear.snap holds no training state: ", 0), 0u)
      << error;
}

// A checksummed snapshot whose generator states do not match its world size
// (only a hand-made file can be one) is a data error, not a crash.
TEST_F(TrainerTest, SnapshotWithoutAGeneratorStatePerRankIsADataError) {
  Workload w = buildWorkload("linear", {});
  TrainingTask task = w.task();
  torch::serialize::OutputArchive archive, model, optimizer;
  archive.write("format", c10::IValue(int64_t{1}));
  archive.write("workload", c10::IValue(std::string("linear")));
  archive.write("world_size", c10::IValue(int64_t{2}));
  archive.write("epoch", c10::IValue(int64_t{1}));
  archive.write("step", c10::IValue(int64_t{0}));
  task.model.save(model);
  archive.write("model", model);
  task.optimizer.save(optimizer);
  archive.write("optimizer", optimizer);
  archive.write("rng", torch::zeros({1, 8}, torch::kByte));  // one state, two ranks
  std::ostringstream bytes;
  archive.save_to(bytes);
  writeSnapshotFile(dir_ + "/linear.snap", bytes.str());
  EXPECT_EQ(train(options(2)).error,
            "snapshot " + dir_ +
                "/linear.snap does not hold one generator state per rank of "
                "its 2-rank run");
}

// A snapshot that finished every epoch asked for: nothing runs, nothing
// is reported as run, and the caller learns where it resumed from.
TEST_F(TrainerTest, AFinishedSnapshotLeavesNothingToTrain) {
  ASSERT_EQ(train(options(2)).error, "");
  TrainerOptions o = options(2);
  o.progress = ProgressStyle::kEpochs;
  for (int64_t epochs : {2, 1}) {
    o.epochs = epochs;
    const Outcome again = trainRanks(2, o, "linear", /*seed=*/5);
    ASSERT_EQ(again.error, "");
    EXPECT_TRUE(again.ran.empty());
    EXPECT_EQ(again.startEpoch, 2);
    EXPECT_EQ(again.resumedFrom, dir_ + "/linear.snap");
    EXPECT_EQ(again.progress, "");  // no "resumed from", no epoch lines
  }
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

  std::vector<ExitCode> codes(2, ExitCode::kSuccess);
  runGlooThreads(2, [&](Communicator& comm) {
    Workload w = buildWorkload("linear", {});
    std::ostringstream out, err;
    Trainer trainer(w.task(), comm, o, out, err);
    try {
      trainer.run();
    } catch (const Error& e) {
      codes[static_cast<size_t>(comm.rank())] = e.exitCode();
    }
  });
  EXPECT_EQ(codes, (std::vector<ExitCode>{ExitCode::kIo, ExitCode::kIo}));
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
