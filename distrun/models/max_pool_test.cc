#include "distrun/models/max_pool.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>

namespace distrun::models {
namespace {

// Ours (on one intra-op thread) against torch::max_pool2d(x, 2): the same
// values and, for one upstream gradient, the same input gradient, bit for bit.
void expectSameAsTorch(const torch::Tensor& x) {
  at::set_num_threads(1);
  const torch::Tensor a = x.clone().requires_grad_();
  const torch::Tensor b = x.clone().requires_grad_();
  const torch::Tensor ours = maxPool2x2(a);
  const torch::Tensor theirs = torch::max_pool2d(b, 2);
  ASSERT_EQ(ours.sizes(), theirs.sizes());
  EXPECT_TRUE(torch::equal(ours.isnan(), theirs.isnan()));
  EXPECT_TRUE(torch::equal(ours.nan_to_num(0), theirs.nan_to_num(0)));
  const torch::Tensor upstream = torch::randn(theirs.sizes());
  ours.backward(upstream);
  theirs.backward(upstream);
  EXPECT_TRUE(torch::equal(a.grad(), b.grad()));
}

TEST(MaxPoolTest, EqualsTorchOnRandomInput) {
  torch::manual_seed(1);
  expectSameAsTorch(torch::randn({3, 5, 24, 24}));
}

// One thread: this kernel; more: torch's parallel one.
TEST(MaxPoolTest, LeavesSeveralThreadsToTorch) {
  const torch::Tensor x = torch::randn({2, 3, 8, 8}).requires_grad_();
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const std::string one = maxPool2x2(x).grad_fn()->name();
  at::set_num_threads(2);
  const std::string two = maxPool2x2(x).grad_fn()->name();
  at::set_num_threads(threads);
  EXPECT_EQ(one.find("MaxPool2DWithIndices"), std::string::npos) << one;
  EXPECT_NE(two.find("MaxPool2DWithIndices"), std::string::npos) << two;
}

TEST(MaxPoolTest, OddSidesDropTheLastRowAndColumnAsTorchDoes) {
  torch::manual_seed(2);
  expectSameAsTorch(torch::randn({2, 3, 7, 9}));
}

// After a ReLU most windows hold equal zeros: the first one wins.
TEST(MaxPoolTest, TiesGoToTheFirstElementAsInTorch) {
  torch::manual_seed(3);
  expectSameAsTorch(torch::randint(-3, 2, {4, 8, 12, 12}).to(torch::kFloat).relu());
}

TEST(MaxPoolTest, NanAndInfinitiesAsInTorch) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const float nan = std::nanf("");
  expectSameAsTorch(torch::tensor({-inf, -inf, -inf, -inf, 1.0f, nan, nan, 2.0f, inf, 1.0f, inf,
                                   3.0f, nan, -inf, 0.0f, 5.0f})
                        .reshape({1, 1, 4, 4})
                        .permute({0, 1, 3, 2})
                        .contiguous());
}

TEST(MaxPoolTest, OtherInputsAreTorchMaxPool) {
  torch::manual_seed(4);
  const torch::Tensor d = torch::randn({2, 2, 6, 6}, torch::kDouble);
  EXPECT_TRUE(torch::equal(maxPool2x2(d), torch::max_pool2d(d, 2)));
  const torch::Tensor strided = torch::randn({2, 6, 6, 2}).permute({0, 3, 1, 2});
  EXPECT_TRUE(torch::equal(maxPool2x2(strided), torch::max_pool2d(strided, 2)));
}

}  // namespace
}  // namespace distrun::models
