#include "distrun/models/dropout.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <mutex>
#include <optional>

#include "distrun/common/enforce.h"

namespace distrun::models {

namespace {

constexpr int kMaxBits = 8;

struct Dyadic {
  int bits;        // m: each element reads this many random bits
  uint32_t below;  // k: the element is dropped when they are below k
};

std::optional<Dyadic> asDyadic(double p) {
  if (!(p > 0 && p < 1)) return std::nullopt;
  for (int bits = 1; bits <= kMaxBits; ++bits) {
    const double scaled = std::ldexp(p, bits);
    if (scaled == std::floor(scaled)) return Dyadic{bits, static_cast<uint32_t>(scaled)};
  }
  return std::nullopt;
}

}  // namespace

bool isDyadicDropout(double p) { return asDyadic(p).has_value(); }

torch::Tensor dyadicDropoutMask(at::IntArrayRef sizes, double p) {
  const std::optional<Dyadic> d = asDyadic(p);
  DISTRUN_ENFORCE(d.has_value(), "dropout probability ", p, " is not k / 2^m with m <= 8");
  torch::Tensor mask = torch::empty(sizes, torch::kFloat);
  // ATen's dropout scales its 0/1 noise by dividing by (1 - p) in float.
  const float kept = 1.0f / static_cast<float>(1.0 - p);
  const int perWord = 32 / d->bits;
  const uint32_t group = (1u << d->bits) - 1;
  float* out = mask.data_ptr<float>();
  const int64_t n = mask.numel();
  auto* generator = at::get_generator_or_default<at::CPUGeneratorImpl>(
      c10::nullopt, at::detail::getDefaultCPUGenerator());
  std::lock_guard<std::mutex> lock(generator->mutex_);
  for (int64_t i = 0; i < n;) {
    uint32_t word = generator->random();
    for (int j = 0; j < perWord && i < n; ++j, ++i, word >>= d->bits) {
      out[i] = (word & group) < d->below ? 0.0f : kept;
    }
  }
  return mask;
}

torch::Tensor dyadicDropout(const torch::Tensor& input, double p, bool training) {
  if (!training || input.scalar_type() != torch::kFloat || !input.device().is_cpu() ||
      !isDyadicDropout(p)) {
    return torch::dropout(input, p, training);
  }
  return input * dyadicDropoutMask(input.sizes(), p);
}

}  // namespace distrun::models
