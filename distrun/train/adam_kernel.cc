#include "distrun/train/adam_kernel.h"

#include <algorithm>
#include <cmath>

// Built with -O3 -fno-math-errno -ffp-contract=off (CMakeLists.txt): the
// loops vectorise, sqrt included, and no multiply and add are fused, so
// the AVX2 clone and the baseline compute the same bits.

namespace distrun::train {

namespace {

// adamUpdate's loop, amsgrad's running maximum kept when maxExpAvgSq is not
// null. Neither that branch nor the weight decay's changes inside the loop:
// the compiler takes each once, outside it, and vectorises every version.
__attribute__((target_clones("avx2", "default"))) void adam(
    const AdamCoefficients c, int64_t n, float* __restrict param, const float* __restrict grad,
    float* __restrict expAvg, float* __restrict expAvgSq, float* __restrict maxExpAvgSq) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = c.weightDecay != 0 ? grad[i] + c.weightDecay * param[i] : grad[i];
    const float m = expAvg[i] * c.beta1 + c.oneMinusBeta1 * g;
    const float v = expAvgSq[i] * c.beta2 + c.oneMinusBeta2 * g * g;
    expAvg[i] = m;
    expAvgSq[i] = v;
    float vUsed = v;
    if (maxExpAvgSq != nullptr) {
      vUsed = std::isnan(v) ? v : std::max(maxExpAvgSq[i], v);
      maxExpAvgSq[i] = vUsed;
    }
    const float denominator = std::sqrt(vUsed) / c.biasCorrection2Sqrt + c.eps;
    param[i] = param[i] + c.negativeStepSize * m / denominator;
  }
}

}  // namespace

void adamUpdate(const AdamCoefficients& c, int64_t n, float* param, const float* grad,
                float* expAvg, float* expAvgSq, float* maxExpAvgSq) {
  adam(c, n, param, grad, expAvg, expAvgSq, maxExpAvgSq);
}

}  // namespace distrun::train
