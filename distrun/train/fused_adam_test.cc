#include "distrun/train/fused_adam.h"

#include <gtest/gtest.h>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

namespace distrun::train {
namespace {

// LibTorch's kernels fuse some multiply-adds, FusedAdam rounds each
// operation: after tens of steps the two differ by a few float roundings
// of the tensor's largest values (a value that cancelled to near zero
// keeps those roundings), far below this share of its largest magnitude.
constexpr double kNormwise = 1e-5;

// max |a - b| <= kNormwise * max |b|.
void expectClose(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  const double difference = (a - b).abs().max().item<double>();
  const double scale = b.abs().max().item<double>();
  EXPECT_LE(difference, kNormwise * scale)
      << what << " differs by up to " << difference << " where its largest magnitude is " << scale;
}

// Parameters of assorted sizes (one above the kernel's parallel grain),
// each a fresh leaf, from a fixed seed.
std::vector<torch::Tensor> makeParameters(torch::ScalarType type = torch::kFloat) {
  torch::manual_seed(7);
  std::vector<torch::Tensor> params;
  for (int64_t n : {1, 5, 1000, 70000}) {
    params.push_back(torch::randn({n}, torch::dtype(type)).requires_grad_());
  }
  return params;
}

std::vector<torch::Tensor> copyOf(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

// Step `step`'s gradients, the same for every copy: mixed scales, some zeros.
void setGradients(const std::vector<torch::Tensor>& params, int step) {
  torch::manual_seed(1000 + step);
  for (const torch::Tensor& p : params) {
    torch::Tensor g = torch::randn_like(p) * torch::rand_like(p) * 3;
    g.masked_fill_(torch::rand_like(p) < 0.1, 0);
    p.mutable_grad() = g;
  }
}

void run(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params,
         int firstStep, int steps) {
  for (int s = firstStep; s < firstStep + steps; ++s) {
    setGradients(params, s);
    optimizer.step();
  }
}

void expectClose(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) expectClose(a[i], b[i], fmt::format("parameter {}", i));
}

void expectEqual(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
}

const torch::optim::AdamParamState& stateOf(const torch::optim::Optimizer& optimizer,
                                            const torch::Tensor& param) {
  const auto& all = optimizer.state();
  const auto found = all.find(c10::guts::to_string(param.unsafeGetTensorImpl()));
  EXPECT_NE(found, all.end());
  return static_cast<const torch::optim::AdamParamState&>(*found->second);
}

struct Case {
  const char* name;
  torch::optim::AdamOptions options;
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.name; }

class FusedAdamMatches : public ::testing::TestWithParam<Case> {};

TEST_P(FusedAdamMatches, LibTorchsAdamToRounding) {
  const std::vector<torch::Tensor> reference = makeParameters();
  const std::vector<torch::Tensor> fused = copyOf(reference);
  torch::optim::Adam adam(reference, GetParam().options);
  FusedAdam fusedAdam(fused, GetParam().options);
  run(adam, reference, 0, 40);
  run(fusedAdam, fused, 0, 40);
  expectClose(fused, reference);
  for (size_t i = 0; i < fused.size(); ++i) {
    const auto& mine = stateOf(fusedAdam, fused[i]);
    const auto& theirs = stateOf(adam, reference[i]);
    EXPECT_EQ(mine.step(), 40);
    expectClose(mine.exp_avg(), theirs.exp_avg(), fmt::format("exp_avg {}", i));
    expectClose(mine.exp_avg_sq(), theirs.exp_avg_sq(), fmt::format("exp_avg_sq {}", i));
    ASSERT_EQ(mine.max_exp_avg_sq().defined(), theirs.max_exp_avg_sq().defined());
    if (mine.max_exp_avg_sq().defined()) {
      expectClose(mine.max_exp_avg_sq(), theirs.max_exp_avg_sq(),
                  fmt::format("max_exp_avg_sq {}", i));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Options, FusedAdamMatches,
    ::testing::Values(Case{"defaults", torch::optim::AdamOptions(1e-3)},
                      Case{"large_lr", torch::optim::AdamOptions(0.1)},
                      Case{"betas_eps",
                           torch::optim::AdamOptions(1e-2).betas({0.5, 0.9}).eps(1e-3)},
                      Case{"weight_decay", torch::optim::AdamOptions(1e-2).weight_decay(0.1)},
                      Case{"amsgrad", torch::optim::AdamOptions(1e-2).amsgrad(true)}),
    [](const ::testing::TestParamInfo<Case>& c) { return std::string(c.param.name); });

TEST(FusedAdamTest, GroupsKeepTheirOwnOptions) {
  const std::vector<torch::Tensor> reference = makeParameters();
  const std::vector<torch::Tensor> fused = copyOf(reference);
  const auto groups = [](const std::vector<torch::Tensor>& p) {
    return std::vector<torch::optim::OptimizerParamGroup>{
        {{p[0], p[1]}, std::make_unique<torch::optim::AdamOptions>(0.5)},
        {{p[2], p[3]},
         std::make_unique<torch::optim::AdamOptions>(
             torch::optim::AdamOptions(1e-3).amsgrad(true).weight_decay(0.5))}};
  };
  torch::optim::Adam adam(groups(reference));
  FusedAdam fusedAdam(groups(fused));
  run(adam, reference, 0, 20);
  run(fusedAdam, fused, 0, 20);
  expectClose(fused, reference);
}

TEST(FusedAdamTest, StateMovesBetweenItAndLibTorchsAdam) {
  const std::vector<torch::Tensor> reference = makeParameters();
  const std::vector<torch::Tensor> fused = copyOf(reference);
  torch::optim::Adam adam(reference);
  FusedAdam fusedAdam(fused);
  run(adam, reference, 0, 10);
  run(fusedAdam, fused, 0, 10);

  // Each takes over the other's state, and both go on as before.
  torch::serialize::OutputArchive fromFused, fromLibTorch;
  fusedAdam.save(fromFused);
  adam.save(fromLibTorch);
  const std::vector<torch::Tensor> continuedByLibTorch = copyOf(fused);
  const std::vector<torch::Tensor> continuedByFused = copyOf(reference);
  torch::optim::Adam libTorchTakesOver(continuedByLibTorch);
  FusedAdam fusedTakesOver(continuedByFused);
  std::stringstream a, b;
  fromFused.save_to(a);
  fromLibTorch.save_to(b);
  torch::serialize::InputArchive readA, readB;
  readA.load_from(a);
  readB.load_from(b);
  libTorchTakesOver.load(readA);
  fusedTakesOver.load(readB);

  run(adam, reference, 10, 10);
  run(fusedAdam, fused, 10, 10);
  run(libTorchTakesOver, continuedByLibTorch, 10, 10);
  run(fusedTakesOver, continuedByFused, 10, 10);
  expectClose(continuedByLibTorch, reference);
  expectClose(continuedByFused, fused);
  EXPECT_EQ(stateOf(fusedTakesOver, continuedByFused[3]).step(), 20);
}

TEST(FusedAdamTest, SameBitsWithAnyNumberOfThreads) {
  const int threads = at::get_num_threads();
  const std::vector<torch::Tensor> one = makeParameters();
  const std::vector<torch::Tensor> four = copyOf(one);
  FusedAdam a(one), b(four);
  at::set_num_threads(1);
  run(a, one, 0, 5);
  at::set_num_threads(4);
  run(b, four, 0, 5);
  at::set_num_threads(threads);
  expectEqual(one, four);
}

TEST(FusedAdamTest, ParameterWithoutGradientIsLeftAlone) {
  const std::vector<torch::Tensor> params = makeParameters();
  const torch::Tensor before = params[1].detach().clone();
  FusedAdam adam(params);
  setGradients(params, 0);
  params[1].mutable_grad() = torch::Tensor();
  adam.step();
  EXPECT_TRUE(torch::equal(params[1], before));
  EXPECT_EQ(adam.state().size(), params.size() - 1);
}

TEST(FusedAdamTest, OtherTensorsRunLibTorchsAdamExactly) {
  // Double parameters, and a float parameter that is a transposed view.
  std::vector<torch::Tensor> reference = makeParameters(torch::kDouble);
  reference.push_back(torch::randn({30, 20}).t().requires_grad_());
  const std::vector<torch::Tensor> fused = copyOf(reference);
  fused.back().set_data(reference.back().detach().clone().t().contiguous().t());
  ASSERT_FALSE(fused.back().is_contiguous());
  torch::optim::Adam adam(reference);
  FusedAdam fusedAdam(fused);
  run(adam, reference, 0, 10);
  run(fusedAdam, fused, 0, 10);
  expectEqual(fused, reference);
}

TEST(FusedAdamTest, StateOfTheWrongSizeIsRefusedAsLibTorchRefusesIt) {
  const std::vector<torch::Tensor> params = makeParameters();
  FusedAdam adam(params);
  run(adam, params, 0, 1);
  auto& state = static_cast<torch::optim::AdamParamState&>(
      *adam.state()[c10::guts::to_string(params[3].unsafeGetTensorImpl())]);
  state.exp_avg(torch::zeros({3}));
  setGradients(params, 1);
  EXPECT_THROW(adam.step(), c10::Error);
}

TEST(FusedAdamTest, ReturnsTheClosuresLoss) {
  const std::vector<torch::Tensor> params = makeParameters();
  const torch::Tensor expected = params[2].detach().square().sum();
  FusedAdam adam(params);
  const torch::Tensor loss = adam.step([&] {
    torch::Tensor l = params[2].square().sum();
    l.backward();
    return l;
  });
  EXPECT_TRUE(torch::equal(loss, expected));
  EXPECT_EQ(adam.state().size(), 1u);
}

}  // namespace
}  // namespace distrun::train
