#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace distrun::models {

// PyTorch's MNIST example network (pytorch/examples mnist/main.py): two 3x3
// convolutions of 32 and 64 channels, 2x2 max-pool, dropout 0.25, a
// 128-unit hidden layer, dropout 0.5, 10 classes as log-probabilities.
// Input N x 1 x 28 x 28; 1,199,882 parameters. The dropouts are
// models::dyadicDropout (dropout.h): torch::dropout with a cheaper mask;
// the pooling is models::maxPool2x2 (max_pool.h), torch::max_pool2d's
// result with a cheaper kernel.
class MnistCnnImpl : public torch::nn::Module {
 public:
  MnistCnnImpl();
  torch::Tensor forward(const torch::Tensor& images);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(MnistCnn);

}  // namespace distrun::models
