#pragma once

#include <cstdint>

namespace distrun::train {

// The scalars of one Adam step for one parameter, in float as LibTorch's
// Adam applies them to float tensors.
struct AdamCoefficients {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float oneMinusBeta1 = 0.1f;
  float oneMinusBeta2 = 0.001f;
  float biasCorrection2Sqrt = 1;  // sqrt(1 - beta2^step)
  float eps = 1e-8f;
  float negativeStepSize = -1e-3f;  // -lr / (1 - beta1^step)
  float weightDecay = 0;            // 0: the gradient as it is
};

// One Adam step over `n` float elements, in a single pass: the same
// operations, in the same order, as LibTorch's Adam::step runs as separate
// tensor operations (weight decay, first and second moments, amsgrad's
// running maximum when `maxExpAvgSq` is not null, denominator, update).
// Every operation is rounded on its own (no fused multiply-add), so each
// instruction set the function is compiled for gives the same bits, and
// ranks on different CPUs stay bitwise equal. Not thread-safe on
// overlapping ranges; disjoint ranges may run in parallel.
void adamUpdate(const AdamCoefficients& c, int64_t n, float* param, const float* grad,
                float* expAvg, float* expAvgSq, float* maxExpAvgSq);

}  // namespace distrun::train
