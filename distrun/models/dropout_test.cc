#include "distrun/models/dropout.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace distrun::models {
namespace {

constexpr int64_t kElements = 1 << 20;

// Seeded, so each figure below is one fixed draw: the bounds are about 10
// standard deviations wide, and no rerun can land elsewhere.
torch::Tensor seededMask(double p, uint64_t seed = 7) {
  torch::manual_seed(seed);
  return dyadicDropoutMask({kElements}, p);
}

TEST(DropoutTest, KnowsWhichProbabilitiesItDrawsExactly) {
  for (double p : {0.5, 0.25, 0.75, 0.125, 3.0 / 256}) EXPECT_TRUE(isDyadicDropout(p)) << p;
  for (double p : {0.0, 1.0, 0.1, 0.3, 1.0 / 512, -0.5, 1.5}) EXPECT_FALSE(isDyadicDropout(p)) << p;
}

TEST(DropoutTest, MaskIsZeroOrTheKeptScaleAtRateP) {
  for (double p : {0.5, 0.25, 0.75, 3.0 / 256}) {
    const torch::Tensor mask = seededMask(p);
    const float kept = 1.0f / static_cast<float>(1.0 - p);
    const torch::Tensor zero = mask.eq(0);
    EXPECT_TRUE(zero.logical_or(mask.eq(kept)).all().item<bool>()) << p;
    const double dropped = zero.to(torch::kDouble).mean().item<double>();
    const double sd = std::sqrt(p * (1 - p) / kElements);
    EXPECT_NEAR(dropped, p, 10 * sd) << p;
  }
}

// Neighbours share a random word: each pair must still be independent.
TEST(DropoutTest, NeighboursAreIndependent) {
  for (double p : {0.5, 0.25}) {
    const torch::Tensor zero = seededMask(p).eq(0).to(torch::kDouble);
    const double both = (zero.slice(0, 0, kElements - 1) * zero.slice(0, 1)).mean().item<double>();
    const double sd = std::sqrt(p * p * (1 - p * p) / kElements);
    EXPECT_NEAR(both, p * p, 10 * sd) << p;
  }
}

TEST(DropoutTest, FollowsTorchsSeed) {
  EXPECT_TRUE(seededMask(0.25, 1).equal(seededMask(0.25, 1)));
  EXPECT_FALSE(seededMask(0.25, 1).equal(seededMask(0.25, 2)));
}

TEST(DropoutTest, ScalesTheKeptAndPassesGradientsThroughTheMask) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::rand({64, 100}).add_(1).requires_grad_();
  const torch::Tensor y = dyadicDropout(x, 0.25, /*training=*/true);
  y.sum().backward();
  const torch::Tensor kept = y.ne(0);
  EXPECT_TRUE(torch::allclose(y.masked_select(kept), x.detach().masked_select(kept) / 0.75));
  EXPECT_TRUE(x.grad().equal(kept.to(torch::kFloat) * (1.0f / 0.75f)));
}

TEST(DropoutTest, EvaluationAndOtherCasesAreTorchDropout) {
  const torch::Tensor x = torch::rand({8, 8});
  EXPECT_TRUE(dyadicDropout(x, 0.25, /*training=*/false).equal(x));
  torch::manual_seed(5);
  const torch::Tensor ours = dyadicDropout(x, 0.3, /*training=*/true);
  torch::manual_seed(5);
  EXPECT_TRUE(ours.equal(torch::dropout(x, 0.3, /*training=*/true)));
  const torch::Tensor d = x.to(torch::kDouble);
  torch::manual_seed(5);
  const torch::Tensor ourDouble = dyadicDropout(d, 0.25, /*training=*/true);
  torch::manual_seed(5);
  EXPECT_TRUE(ourDouble.equal(torch::dropout(d, 0.25, /*training=*/true)));
}

}  // namespace
}  // namespace distrun::models
