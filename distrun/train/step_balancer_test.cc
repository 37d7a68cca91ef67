#include "distrun/train/step_balancer.h"

#include <gtest/gtest.h>

#include <numeric>

#include "distrun/common/error.h"

namespace distrun::train {
namespace {

int64_t sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

TEST(StepBalancerTest, EqualSharesBeforeAnyMeasurement) {
  EXPECT_EQ(StepBalancer(2).split(128), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(StepBalancer(3).split(10), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(StepBalancer(1).split(7), (std::vector<int64_t>{7}));
}

TEST(StepBalancerTest, SharesFollowSpeedAndSumToTheStep) {
  StepBalancer b(2);
  b.record({1.0 / 100, 1.0 / 50});  // rank 0 twice as fast
  const std::vector<int64_t> share = b.split(128);
  EXPECT_EQ(share, (std::vector<int64_t>{85, 43}));  // 85.33 and 42.67
  EXPECT_EQ(sum(share), 128);
}

TEST(StepBalancerTest, EveryRankKeepsAtLeastOneSample) {
  StepBalancer b(3);
  b.record({1e-6, 1.0, 1e-6});
  const std::vector<int64_t> share = b.split(4);
  EXPECT_EQ(sum(share), 4);
  for (int64_t s : share) EXPECT_GE(s, 1);
  EXPECT_EQ(share[1], 1);
}

TEST(StepBalancerTest, SpeedsAreSmoothedOverSteps) {
  StepBalancer b(2);
  b.record({1.0 / 100, 1.0 / 100});
  b.record({1.0 / 100, 1.0 / 50});  // rank 1: 0.7 * 100 + 0.3 * 50 = 85
  EXPECT_EQ(b.split(185), (std::vector<int64_t>{100, 85}));
}

TEST(StepBalancerTest, AnUnmeasuredRankKeepsItsEstimateOrTheSplitStaysEqual) {
  StepBalancer b(2);
  b.record({1.0 / 100, 0});  // rank 1 not measured yet: equal shares
  EXPECT_EQ(b.split(10), (std::vector<int64_t>{5, 5}));
  b.record({0, 1.0 / 25});
  EXPECT_EQ(b.split(125), (std::vector<int64_t>{100, 25}));
  b.record({-1, 0});  // nothing measured: the same estimates
  EXPECT_EQ(b.split(125), (std::vector<int64_t>{100, 25}));
}

TEST(StepBalancerTest, OneMeasurementPerRank) {
  StepBalancer b(2);
  EXPECT_THROW(b.record({1.0}), EnforceError);
}

}  // namespace
}  // namespace distrun::train
