#include "distrun/data/synthetic.h"

#include <ATen/ATen.h>

#include <gtest/gtest.h>

#include "distrun/data/test_files.h"

namespace distrun::data {
namespace {

TEST(SyntheticTest, HasTheTutorialsShapeAndRange) {
  RegressionData data = makeSyntheticRegression();
  EXPECT_EQ(data.inputs.sizes(), at::IntArrayRef({2048, 20}));
  EXPECT_EQ(data.targets.sizes(), at::IntArrayRef({2048, 1}));
  EXPECT_EQ(data.inputs.scalar_type(), at::kFloat);
  EXPECT_EQ(data.targets.scalar_type(), at::kFloat);
  EXPECT_GE(data.inputs.min().item<float>(), 0.0f);
  EXPECT_LT(data.inputs.max().item<float>(), 1.0f);
  EXPECT_GE(data.targets.min().item<float>(), 0.0f);
  EXPECT_LT(data.targets.max().item<float>(), 1.0f);
  EXPECT_EQ(makeSyntheticRegression(0).inputs.sizes(), at::IntArrayRef({0, 20}));
}

TEST(SyntheticTest, TheSameSeedGivesTheSameDataAndASmallerSetIsAPrefix) {
  RegressionData a = makeSyntheticRegression(100, 5);
  RegressionData b = makeSyntheticRegression(100, 5);
  EXPECT_TRUE(at::equal(a.inputs, b.inputs));
  EXPECT_TRUE(at::equal(a.targets, b.targets));
  RegressionData prefix = makeSyntheticRegression(10, 5);
  EXPECT_TRUE(at::equal(prefix.inputs, a.inputs.slice(0, 0, 10)));
  EXPECT_TRUE(at::equal(prefix.targets, a.targets.slice(0, 0, 10)));
}

TEST(SyntheticTest, DifferentSeedsGiveDifferentData) {
  RegressionData a = makeSyntheticRegression(100, 0);
  RegressionData b = makeSyntheticRegression(100, 1);
  EXPECT_FALSE(at::equal(a.inputs, b.inputs));
  EXPECT_FALSE(at::equal(a.targets, b.targets));
}

TEST(SyntheticTest, RejectsANegativeSize) {
  testing::Failure f = testing::failureOf([] { makeSyntheticRegression(-1); });
  EXPECT_EQ(f.message, "synthetic dataset size -1 is negative: expected 0 or more");
  EXPECT_EQ(f.code, ExitCode::kUsage);
}

}  // namespace
}  // namespace distrun::data
