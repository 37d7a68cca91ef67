#pragma once

#include <torch/optim/adam.h>

namespace distrun::train {

// torch::optim::Adam whose step updates each parameter in one pass over its
// memory (adam_kernel.h) instead of LibTorch's eight tensor operations, each
// a pass of its own: for the MNIST CNN's 1.2 million parameters a step
// reads and writes 34 MB instead of about 100, 0.5-0.8 ms on one core
// instead of 2-2.5 (docs/training.md).
//
// Same options, same algorithm (weight decay, amsgrad, parameter groups)
// and the same state: save() and load() read and write LibTorch's Adam
// format, so a snapshot moves between the two. The results agree with
// torch::optim::Adam to float rounding (LibTorch's vectorised kernels fuse
// some multiply-adds; this one rounds each operation), and are the same
// bits for every thread count and CPU, so DDP's ranks stay bitwise equal.
// A step with a parameter that is not a dense, contiguous float CPU tensor
// (or whose gradient or state is not) runs LibTorch's own Adam::step.
//
// Not thread-safe, as torch::optim::Adam. Throws what Adam::step throws.
class FusedAdam : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;

  torch::Tensor step(LossClosure closure = nullptr) override;

 private:
  bool fusable() const;
  void update(const torch::Tensor& param, const torch::optim::AdamOptions& options);
};

}  // namespace distrun::train
