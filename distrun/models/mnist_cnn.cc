#include "distrun/models/mnist_cnn.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>

#include "distrun/models/dropout.h"
#include "distrun/models/max_pool.h"

namespace distrun::models {

MnistCnnImpl::MnistCnnImpl()
    : conv1_(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)))),
      conv2_(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)))),
      fc1_(register_module("fc1", torch::nn::Linear(9216, 128))),
      fc2_(register_module("fc2", torch::nn::Linear(128, 10))) {}

torch::Tensor MnistCnnImpl::forward(const torch::Tensor& images) {
  torch::Tensor x = torch::relu(conv1_->forward(images));
  x = torch::relu(conv2_->forward(x));
  x = maxPool2x2(x);
  x = dyadicDropout(x, 0.25, is_training()).flatten(1);
  x = torch::relu(fc1_->forward(x));
  x = fc2_->forward(dyadicDropout(x, 0.5, is_training()));
  return torch::log_softmax(x, /*dim=*/1);
}

}  // namespace distrun::models
