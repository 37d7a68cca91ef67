#include "distrun/models/mnist_cnn.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>

namespace distrun::models {

MnistCnnImpl::MnistCnnImpl()
    : conv1_(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)))),
      conv2_(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)))),
      dropout1_(register_module("dropout1", torch::nn::Dropout(0.25))),
      dropout2_(register_module("dropout2", torch::nn::Dropout(0.5))),
      fc1_(register_module("fc1", torch::nn::Linear(9216, 128))),
      fc2_(register_module("fc2", torch::nn::Linear(128, 10))) {}

torch::Tensor MnistCnnImpl::forward(const torch::Tensor& images) {
  torch::Tensor x = torch::relu(conv1_->forward(images));
  x = torch::relu(conv2_->forward(x));
  x = torch::max_pool2d(x, 2);
  x = dropout1_->forward(x).flatten(1);
  x = torch::relu(fc1_->forward(x));
  x = fc2_->forward(dropout2_->forward(x));
  return torch::log_softmax(x, /*dim=*/1);
}

}  // namespace distrun::models
