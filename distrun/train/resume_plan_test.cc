#include "distrun/train/resume_plan.h"

#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::train {
namespace {

// 2048 samples, batch 32: 2 ranks take 32 steps an epoch.
RunShape shape(int64_t world, int64_t batch = 32, int64_t size = 2048) {
  return {.worldSize = world, .batchSize = batch, .datasetSize = size, .dropLast = false};
}

EpochPosition at(int64_t epoch, EpochRange range, int64_t step) {
  return {.epoch = epoch, .range = range, .step = step};
}

// A snapshot of `shape` at `where`, its rest as the writing run computed it.
SnapshotPosition written(const RunShape& shape, const EpochPosition& where) {
  return {.shape = shape, .at = where, .rest = remainingOf(shape, where)};
}

ResumePlan plan(const RunShape& was, const EpochPosition& where, const RunShape& now) {
  return planResume(written(was, where), now, "s");
}

void expectPosition(const ResumePlan& plan, const EpochPosition& want, bool resized) {
  EXPECT_EQ(plan.position.epoch, want.epoch);
  EXPECT_EQ(plan.position.range, want.range);
  EXPECT_EQ(plan.position.step, want.step);
  EXPECT_EQ(plan.resized, resized);
}

TEST(ResumePlanTest, AnEpochsStartGoesOnWithTheWholeEpochOnAnyShape) {
  const EpochPosition start = at(3, {0, 2048}, 0);
  expectPosition(plan(shape(2), start, shape(3, 64)), at(3, {0, 2048}, 0), false);
  // Another training set size starts its own epoch.
  expectPosition(plan(shape(2), start, shape(1, 32, 1000)), at(3, {0, 1000}, 0), false);
}

TEST(ResumePlanTest, MidEpochOnTheSameShapeGoesOnWhereItStopped) {
  expectPosition(plan(shape(2), at(0, {0, 2048}, 21), shape(2)), at(0, {0, 2048}, 21), false);
  // A part of an epoch that an earlier resize began, and its first step.
  expectPosition(plan(shape(3), at(1, {1344, 2048}, 4), shape(3)), at(1, {1344, 2048}, 4), false);
  expectPosition(plan(shape(3), at(1, {1344, 2048}, 0), shape(3)), at(1, {1344, 2048}, 0), false);
}

TEST(ResumePlanTest, MidEpochOnAnotherWorldOrBatchSizeSplitsTheRest) {
  // 21 steps of 32 on 2 ranks: 1344 samples of the order consumed.
  expectPosition(plan(shape(2), at(0, {0, 2048}, 21), shape(3)), at(0, {1344, 2048}, 0), true);
  expectPosition(plan(shape(2), at(0, {0, 2048}, 21), shape(1)), at(0, {1344, 2048}, 0), true);
  expectPosition(plan(shape(2), at(0, {0, 2048}, 21), shape(2, 64)), at(0, {1344, 2048}, 0), true);
  // The part 3 ranks resumed, 4 steps into it (235 samples each): 384 more.
  expectPosition(plan(shape(3), at(0, {1344, 2048}, 4), shape(2)), at(0, {1728, 2048}, 0), true);
  // The rest the snapshot records is the one taken.
  SnapshotPosition recorded = written(shape(2), at(0, {0, 2048}, 21));
  recorded.rest = {1000, 2000};
  expectPosition(planResume(recorded, shape(3), "s"), at(0, {1000, 2000}, 0), true);
  // Every step done: nothing left of the epoch.
  expectPosition(plan(shape(2), at(0, {0, 2048}, 32), shape(3)), at(0, {2048, 2048}, 0), true);
}

TEST(ResumePlanTest, RemainingOfCountsTheOrderConsumedAndWhereTheEpochEnds) {
  EXPECT_EQ(remainingOf(shape(2), at(0, {0, 2048}, 0)), (EpochRange{0, 2048}));
  EXPECT_EQ(remainingOf(shape(3), at(0, {0, 2048}, 10)), (EpochRange{960, 2048}));
  RunShape dropping = shape(3);
  dropping.dropLast = true;  // 682 each: the last 2 samples are never trained
  EXPECT_EQ(remainingOf(dropping, at(0, {0, 2048}, 10)), (EpochRange{960, 2046}));
}

TEST(ResumePlanTest, MidEpochOnAnotherTrainingSetSizeIsAConfigError) {
  try {
    planResume(written(shape(2), at(4, {0, 2048}, 21)), shape(2, 32, 1000), "/x/s.snap");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kConfig);
    EXPECT_EQ(std::string(e.what()),
              "snapshot /x/s.snap was written mid-way through epoch 5 of a 2048-sample training "
              "set, this run's has 1000: the epoch's order cannot go on over other data; resume "
              "with the same training set, or delete it to start afresh");
  }
}

TEST(ResumePlanTest, IsMidEpochUnlessAtStepZeroOfTheWholeEpoch) {
  EXPECT_FALSE(isMidEpoch(at(2, {0, 10}, 0), 10));
  EXPECT_TRUE(isMidEpoch(at(2, {0, 10}, 1), 10));
  EXPECT_TRUE(isMidEpoch(at(2, {4, 10}, 0), 10));
}

}  // namespace
}  // namespace distrun::train
