#pragma once

#include <torch/types.h>

namespace distrun::models {

// Dropout as torch::dropout computes it (each element zeroed with
// probability p, the others scaled by 1 / (1 - p)), with a cheaper mask:
// LibTorch's CPU bernoulli_ draws one 32-bit random number per element
// (about 5 ms for the MNIST CNN's 590,000 activations on one thread); this
// one cuts each 32-bit word of the default CPU generator into groups of m
// bits and drops an element when its group's value is below k, which is
// exact for p = k / 2^m with m <= 8 (0.25 and 0.5 take 2 and 1 bits). The
// generator is torch's default, so torch::manual_seed and a snapshot's RNG
// state govern it as they govern torch::dropout. Other p, and types other
// than float, go to torch::dropout.
torch::Tensor dyadicDropout(const torch::Tensor& input, double p, bool training);

// The scaled mask of that dropout for a float tensor of `sizes`: each
// element 0 (probability p) or 1 / (1 - p). p must be k / 2^m, m <= 8, below 1.
torch::Tensor dyadicDropoutMask(at::IntArrayRef sizes, double p);

// Whether p is k / 2^m with m <= 8 and 0 < p < 1.
bool isDyadicDropout(double p);

}  // namespace distrun::models
