#include "distrun/train/fused_adam.h"

#include <cmath>
#include <tuple>

#include <ATen/Parallel.h>
#include <c10/util/string_utils.h>

#include "distrun/train/adam_kernel.h"

namespace distrun::train {

namespace {

bool denseFloat(const torch::Tensor& t) {
  return t.defined() && t.layout() == torch::kStrided && t.device().is_cpu() &&
         t.scalar_type() == torch::kFloat && t.is_contiguous();
}

// LibTorch's Adam keys a parameter's state by its TensorImpl's address.
std::string stateKey(const torch::Tensor& param) {
  return c10::guts::to_string(param.unsafeGetTensorImpl());
}

// Elements per task: whole cache lines, enough to pay for a hand-off.
constexpr int64_t kGrain = 1 << 15;

}  // namespace

torch::Tensor FusedAdam::step(LossClosure closure) {
  if (!fusable()) return Adam::step(std::move(closure));
  torch::NoGradGuard noGrad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enableGrad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    for (const torch::Tensor& param : group.params()) {
      if (param.grad().defined()) update(param, options);
    }
  }
  return loss;
}

// Whether every parameter with a gradient, the gradient and the state it
// has so far (loaded from a snapshot, say) are dense contiguous float CPU
// tensors of the parameter's size. Anything else is Adam::step's to run,
// or to refuse with LibTorch's message.
bool FusedAdam::fusable() const {
  for (const auto& group : param_groups_) {
    const bool amsgrad = static_cast<const torch::optim::AdamOptions&>(group.options()).amsgrad();
    for (const torch::Tensor& param : group.params()) {
      if (!param.grad().defined()) continue;
      const auto fits = [&](const torch::Tensor& t) {
        return denseFloat(t) && t.numel() == param.numel();
      };
      if (!denseFloat(param) || !fits(param.grad())) return false;
      const auto found = state_.find(stateKey(param));
      if (found == state_.end()) continue;
      const auto& s = static_cast<const torch::optim::AdamParamState&>(*found->second);
      if (!fits(s.exp_avg()) || !fits(s.exp_avg_sq())) return false;
      if (amsgrad && !fits(s.max_exp_avg_sq())) return false;
    }
  }
  return true;
}

// Adam::step's bookkeeping for one parameter (its state created on first
// use, its step counted, the bias corrections in double), then the kernel
// over the parameter's elements.
void FusedAdam::update(const torch::Tensor& param, const torch::optim::AdamOptions& options) {
  std::unique_ptr<torch::optim::OptimizerParamState>& slot = state_[stateKey(param)];
  if (!slot) {
    auto fresh = std::make_unique<torch::optim::AdamParamState>();
    fresh->exp_avg(torch::zeros_like(param, torch::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(param, torch::MemoryFormat::Preserve));
    if (options.amsgrad()) {
      fresh->max_exp_avg_sq(torch::zeros_like(param, torch::MemoryFormat::Preserve));
    }
    slot = std::move(fresh);
  }
  auto& s = static_cast<torch::optim::AdamParamState&>(*slot);
  s.step(s.step() + 1);
  const auto [beta1, beta2] = options.betas();
  const double step = static_cast<double>(s.step());
  const double biasCorrection1 = 1 - std::pow(beta1, step);
  const double biasCorrection2 = 1 - std::pow(beta2, step);
  const AdamCoefficients c{
      .beta1 = static_cast<float>(beta1),
      .beta2 = static_cast<float>(beta2),
      .oneMinusBeta1 = static_cast<float>(1 - beta1),
      .oneMinusBeta2 = static_cast<float>(1 - beta2),
      .biasCorrection2Sqrt = static_cast<float>(std::sqrt(biasCorrection2)),
      .eps = static_cast<float>(options.eps()),
      .negativeStepSize = static_cast<float>(-options.lr() / biasCorrection1),
      .weightDecay = static_cast<float>(options.weight_decay()),
  };
  float* p = param.data_ptr<float>();
  const float* g = param.grad().data_ptr<float>();
  float* m = s.exp_avg().data_ptr<float>();
  float* v = s.exp_avg_sq().data_ptr<float>();
  float* vMax = options.amsgrad() ? s.max_exp_avg_sq().data_ptr<float>() : nullptr;
  at::parallel_for(0, param.numel(), kGrain, [&](int64_t begin, int64_t end) {
    adamUpdate(c, end - begin, p + begin, g + begin, m + begin, v + begin,
               vMax == nullptr ? nullptr : vMax + begin);
  });
}

}  // namespace distrun::train
