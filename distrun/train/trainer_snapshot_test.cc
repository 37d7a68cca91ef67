// The Trainer's snapshots: resuming on the same world, on another world
// size at an epoch's end and mid-epoch, and the snapshots it refuses.
#include "distrun/train/trainer.h"

#include <gtest/gtest.h>

#include "distrun/train/trainer_testing.h"

namespace distrun::train {
namespace {

using namespace trainer_testing;  // NOLINT: the fixture and its helpers
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

// Samples of `a` then `b`.
std::vector<int64_t> joined(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

size_t distinct(const std::vector<int64_t>& samples) {
  return std::set<int64_t>(samples.begin(), samples.end()).size();
}

// 2 ranks stop at step 21 of epoch 1 (the elastic case: a node lost after
// that snapshot), 1344 samples of the epoch's order trained. 3 ranks, and
// 1, go on with the other 704, split as a fresh epoch over them would be:
// across the two runs every sample of the epoch is trained once (3 ranks
// pad 704 to 705), and the epoch's loss is over every sample trained in
// it; its samples/s over the resumed part's.
TEST_F(TrainerTest, AMidEpochSnapshotResumesOnAnotherWorldSizeTrainingEachSampleOnce) {
  Recorder first(2, /*stopAfter=*/21);
  const Outcome stopped = trainRanks(2, options(2), "linear", 0, first.requests(), first.hook());
  ASSERT_EQ(stopped.error, "");
  ASSERT_TRUE(stopped.checkpointedAt.has_value());
  ASSERT_EQ(stopped.checkpointedAt->step, 21);
  std::filesystem::copy_file(dir_ + "/linear.snap", dir_ + "/two.snap");

  struct Case {
    int ranks;
    size_t partSteps, epochSteps, padding;
  };
  for (Case c : {Case{3, 8, 22, 1}, Case{1, 22, 64, 0}}) {
    SCOPED_TRACE(c.ranks);
    std::filesystem::copy_file(dir_ + "/two.snap", dir_ + "/linear.snap",
                               std::filesystem::copy_options::overwrite_existing);
    TrainerOptions o = options(2);
    o.progress = ProgressStyle::kEpochs;
    Recorder rest(c.ranks);
    const Outcome resumed = trainRanks(c.ranks, o, "linear", /*seed=*/99, {}, rest.hook());
    ASSERT_EQ(resumed.error, "");  // run() checks that the replicas are equal
    EXPECT_EQ(resumed.startEpoch, 0);
    EXPECT_EQ(resumed.startStep, 0);
    EXPECT_EQ(resumed.startRange, (EpochRange{1344, 2048}));
    EXPECT_EQ(resumed.progress.rfind(
                  fmt::format("resuming epoch 1 mid-way at sample 1344 of 2048 on {} rank{} "
                              "(snapshot {}/linear.snap written by 2 ranks)\n",
                              c.ranks, c.ranks == 1 ? "" : "s", dir_),
                  0),
              0u)
        << resumed.progress;
    ASSERT_EQ(rest.calls[0].size(), c.partSteps + c.epochSteps);  // and epoch 2 whole
    const std::vector<int64_t> epoch = joined(first.trained(), rest.trained(c.partSteps));
    EXPECT_EQ(epoch.size(), 2048 + c.padding);
    EXPECT_EQ(distinct(epoch), 2048u);
    ASSERT_EQ(resumed.ran.size(), 2u);
    EXPECT_NEAR(resumed.ran[0].samplesPerSecond * resumed.ran[0].seconds,
                static_cast<double>(704 + c.padding), 1e-6);
    const double lossSum = first.lossSum(21) + rest.lossSum(static_cast<int64_t>(c.partSteps));
    const double loss = lossSum / static_cast<double>(epoch.size());
    EXPECT_NEAR(resumed.ran[0].trainLoss, loss, 1e-9 * loss);
    EXPECT_EQ(resumed.history.size(), 2u);
  }
}

// The 3 ranks that went on with the epoch stop 4 steps into their part:
// 3 ranks resume it at that step, as any same-shape resume does; 1 rank
// goes on with what is left after 1344 + 3 x 128 = 1728. Each way the
// epoch is trained once over the three runs.
TEST_F(TrainerTest, AResizedEpochResumesAgainFromItsOwnSnapshot) {
  Recorder first(2, /*stopAfter=*/21);
  ASSERT_EQ(trainRanks(2, options(1), "linear", 0, first.requests(), first.hook()).error, "");
  Recorder second(3, /*stopAfter=*/4);
  const Outcome three = trainRanks(3, options(1), "linear", 5, second.requests(), second.hook());
  ASSERT_EQ(three.error, "");
  ASSERT_TRUE(three.checkpointedAt.has_value());
  EXPECT_EQ(three.checkpointedAt->step, 4);
  std::filesystem::copy_file(dir_ + "/linear.snap", dir_ + "/three.snap");
  const std::vector<int64_t> before = joined(first.trained(), second.trained());

  TrainerOptions o = options(1);
  o.progress = ProgressStyle::kEpochs;
  Recorder same(3);
  const Outcome again = trainRanks(3, o, "linear", 7, {}, same.hook());
  ASSERT_EQ(again.error, "");
  EXPECT_EQ(again.startStep, 4);
  EXPECT_EQ(again.startRange, (EpochRange{1344, 2048}));
  EXPECT_EQ(
      again.progress.rfind("resumed from " + dir_ + "/linear.snap: epoch 1, step 4 of 8\n", 0), 0u)
      << again.progress;
  std::vector<int64_t> epoch = joined(before, same.trained());
  EXPECT_EQ(epoch.size(), 2049u);
  EXPECT_EQ(distinct(epoch), 2048u);

  std::filesystem::copy_file(dir_ + "/three.snap", dir_ + "/linear.snap",
                             std::filesystem::copy_options::overwrite_existing);
  Recorder one(1);
  const Outcome single = trainRanks(1, o, "linear", 7, {}, one.hook());
  ASSERT_EQ(single.error, "");
  EXPECT_EQ(single.startRange, (EpochRange{1728, 2048}));
  EXPECT_EQ(single.progress.rfind("resuming epoch 1 mid-way at sample 1728 of 2048 on 1 rank "
                                  "(snapshot " +
                                      dir_ + "/linear.snap written by 3 ranks)\n",
                                  0),
            0u)
      << single.progress;
  epoch = joined(before, one.trained());
  EXPECT_EQ(epoch.size(), 2048u);
  EXPECT_EQ(distinct(epoch), 2048u);
}

// Another batch size on the same world is the same case: the rest of the
// epoch is split into the new batches (352 samples a rank: 6 steps of 64).
TEST_F(TrainerTest, AMidEpochSnapshotResumesWithAnotherBatchSize) {
  Recorder first(2, /*stopAfter=*/21);
  ASSERT_EQ(trainRanks(2, options(1), "linear", 0, first.requests(), first.hook()).error, "");
  TrainerOptions o = options(1);
  o.batchSize = 64;
  o.progress = ProgressStyle::kEpochs;
  Recorder rest(2);
  const Outcome wider = trainRanks(2, o, "linear", 3, {}, rest.hook());
  ASSERT_EQ(wider.error, "");
  EXPECT_EQ(wider.startRange, (EpochRange{1344, 2048}));
  EXPECT_EQ(wider.progress.rfind("resuming epoch 1 mid-way at sample 1344 of 2048 on 2 ranks "
                                 "(snapshot " +
                                     dir_ + "/linear.snap written by 2 ranks, batch size 32)\n",
                                 0),
            0u)
      << wider.progress;
  EXPECT_EQ(rest.calls[0].size(), 6u);
  const std::vector<int64_t> epoch = joined(first.trained(), rest.trained());
  EXPECT_EQ(epoch.size(), 2048u);
  EXPECT_EQ(distinct(epoch), 2048u);
}

// Mid-epoch, the snapshot's positions are in the order of its training
// set: over another one they mean nothing (at an epoch's end any is fine).
TEST_F(TrainerTest, AMidEpochSnapshotOfAnotherTrainingSetSizeIsRefused) {
  Recorder first(2, /*stopAfter=*/21);
  ASSERT_EQ(trainRanks(2, options(1), "linear", 0, first.requests(), first.hook()).error, "");
  const TaskHook fewer = [](int, TrainingTask& task) {
    task.train.inputs = task.train.inputs.narrow(0, 0, 1000);
    task.train.targets = task.train.targets.narrow(0, 0, 1000);
  };
  EXPECT_EQ(trainRanks(1, options(1), "linear", 0, {}, fewer).error,
            "snapshot " + dir_ +
                "/linear.snap was written mid-way through epoch 1 of a 2048-sample training "
                "set, this run's has 1000: the epoch's order cannot go on over other data; "
                "resume with the same training set, or delete it to start afresh");
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

// A hand-made snapshot of `format` as a `world`-rank run of `linear` would
// write it at `step` of epoch 1 (fresh model and optimizer, every rank this
// process's generator state; rank 0's loss 0.5 a sample), with `more`
// fields.
void writeHandMadeSnapshot(const std::string& path, int64_t format, int64_t world, int64_t step,
                           const std::function<void(torch::serialize::OutputArchive&)>& more) {
  Workload w = buildWorkload("linear", {});
  TrainingTask task = w.task();
  torch::serialize::OutputArchive archive, model, optimizer;
  const std::vector<std::pair<const char*, c10::IValue>> fields = {
      {"format", format},
      {"workload", std::string("linear")},
      {"world_size", world},
      {"epoch", int64_t{0}},
      {"step", step},
      {"global_step", step},
      {"loss_sum", 0.5 * static_cast<double>(32 * step)},
      {"samples", static_cast<double>(32 * step)},
      {"history", metricsJson({.workload = "linear"}, {})}};
  for (const auto& [key, value] : fields) archive.write(key, value);
  if (more) more(archive);
  const torch::Tensor state = at::detail::getDefaultCPUGenerator().get_state();
  archive.write("rng", state.unsqueeze(0).repeat({world, 1}));
  task.model.save(model);
  archive.write("model", model);
  task.optimizer.save(optimizer);
  archive.write("optimizer", optimizer);
  std::ostringstream bytes;
  archive.save_to(bytes);
  writeSnapshotFile(path, bytes.str());
}

c10::IValue snapshotField(const std::string& path, const std::string& key) {
  torch::serialize::InputArchive archive;
  std::istringstream bytes(readSnapshotFile(path));
  archive.load_from(bytes);
  c10::IValue value;
  archive.read(key, value);
  return value;
}

// Format 1 recorded no batch size, training set size or part of an epoch:
// they are taken as this run's. Its 2-rank snapshot at step 21 resumes on 2
// ranks at that step, as always, and on 1 rank at sample 1344 of the
// epoch's order, with rank 0's loss so far standing for both ranks'. What
// the run writes next is format 2.
TEST_F(TrainerTest, AFormatOneSnapshotResumesMidEpochOnAnyWorldSize) {
  const std::string snap = dir_ + "/linear.snap";
  TrainerOptions o = options(1);
  o.progress = ProgressStyle::kEpochs;
  writeHandMadeSnapshot(snap, 1, 2, 21, {});
  const Outcome two = trainRanks(2, o);
  ASSERT_EQ(two.error, "");
  EXPECT_EQ(two.startStep, 21);
  EXPECT_EQ(two.startRange, (EpochRange{0, 2048}));
  EXPECT_EQ(two.progress.rfind("resumed from " + snap + ": epoch 1, step 21 of 32\n", 0), 0u)
      << two.progress;

  writeHandMadeSnapshot(snap, 1, 2, 21, {});
  Recorder rest(1);
  const Outcome one = trainRanks(1, o, "linear", 0, {}, rest.hook());
  ASSERT_EQ(one.error, "");
  EXPECT_EQ(one.startRange, (EpochRange{1344, 2048}));
  EXPECT_EQ(one.progress.rfind("resuming epoch 1 mid-way at sample 1344 of 2048 on 1 rank "
                               "(snapshot " +
                                   snap + " written by 2 ranks)\n",
                               0),
            0u)
      << one.progress;
  EXPECT_EQ(rest.trained().size(), 704u);
  ASSERT_EQ(one.ran.size(), 1u);
  const double loss = (0.5 * 1344 + rest.lossSum(22)) / 2048;
  EXPECT_NEAR(one.ran[0].trainLoss, loss, 1e-9 * loss);

  EXPECT_EQ(snapshotField(snap, "format").toInt(), 2);
  EXPECT_EQ(snapshotField(snap, "world_size").toInt(), 1);
  EXPECT_EQ(snapshotField(snap, "batch_size").toInt(), 32);
  EXPECT_EQ(snapshotField(snap, "dataset_size").toInt(), 2048);
  EXPECT_EQ(snapshotField(snap, "epoch").toInt(), 1);  // at epoch 1's end
  EXPECT_EQ(snapshotField(snap, "samples_consumed").toInt(), 0);
  EXPECT_EQ(snapshotField(snap, "samples_end").toInt(), 2048);
}

// What a format-2 snapshot records mid-epoch: the writing run's shape and
// the samples of the epoch's order its ranks had consumed together.
TEST_F(TrainerTest, AMidEpochSnapshotRecordsItsShapeAndTheSamplesConsumed) {
  Recorder first(3, /*stopAfter=*/5);
  ASSERT_EQ(trainRanks(3, options(1), "linear", 0, first.requests(), first.hook()).error, "");
  const std::string snap = dir_ + "/linear.snap";
  EXPECT_EQ(snapshotField(snap, "format").toInt(), 2);
  EXPECT_EQ(snapshotField(snap, "world_size").toInt(), 3);
  EXPECT_EQ(snapshotField(snap, "step").toInt(), 5);
  EXPECT_EQ(snapshotField(snap, "range_begin").toInt(), 0);
  EXPECT_EQ(snapshotField(snap, "range_end").toInt(), 2048);
  EXPECT_EQ(snapshotField(snap, "samples_consumed").toInt(), 3 * 5 * 32);
  EXPECT_EQ(snapshotField(snap, "samples_end").toInt(), 2048);
  EXPECT_EQ(snapshotField(snap, "drop_last").toBool(), false);
  EXPECT_EQ(snapshotField(snap, "epoch_samples").toDouble(), 3 * 5 * 32);
  EXPECT_NEAR(snapshotField(snap, "epoch_loss_sum").toDouble(), first.lossSum(5), 1e-9);
}

TEST_F(TrainerTest, AnUnknownSnapshotFormatOrAnImpossiblePositionIsADataError) {
  const std::string snap = dir_ + "/linear.snap";
  writeHandMadeSnapshot(snap, 3, 2, 21, {});
  EXPECT_EQ(train(options(1)).error, "snapshot " + snap + " has format 3: expected 1 or 2");
  writeHandMadeSnapshot(snap, 2, 2, 3, [](torch::serialize::OutputArchive& a) {
    const std::vector<std::pair<const char*, c10::IValue>> fields = {
        {"batch_size", int64_t{32}},   {"dataset_size", int64_t{2048}},
        {"drop_last", false},          {"range_begin", int64_t{0}},
        {"range_end", int64_t{4096}},  {"samples_consumed", int64_t{0}},
        {"samples_end", int64_t{2048}}};
    for (const auto& [key, value] : fields) a.write(key, value);
  });
  EXPECT_EQ(train(options(1)).error,
            "snapshot " + snap +
                " holds an impossible position: batch size 32, step 3 of samples [0, 4096), "
                "consumed 0 of 2048, in a 2048-sample training set");
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

}  // namespace
}  // namespace distrun::train
