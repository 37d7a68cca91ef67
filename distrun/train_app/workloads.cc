#include "distrun/train_app/workloads.h"

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "distrun/data/mnist.h"
#include "distrun/data/synthetic.h"
#include "distrun/models/mnist_cnn.h"
#include "distrun/train/fused_adam.h"
#include "distrun/train_app/train_flags.h"

namespace distrun::train {

namespace {

TensorDataset firstRows(torch::Tensor inputs, torch::Tensor targets, int64_t limit) {
  if (limit > 0 && limit < inputs.size(0)) {
    inputs = inputs.narrow(0, 0, limit);
    targets = targets.narrow(0, 0, limit);
  }
  return TensorDataset{inputs.contiguous(), targets.contiguous()};
}

double orDefault(double value, double fallback) { return value > 0 ? value : fallback; }

Workload buildMnist(const WorkloadOptions& o) {
  data::checkMnistFolder(o.dataDir);
  const data::MnistData train = data::loadMnist(o.dataDir, data::MnistSplit::kTrain);
  const data::MnistData test = data::loadMnist(o.dataDir, data::MnistSplit::kTest);
  models::MnistCnn net;
  Workload w;
  w.name = "mnist";
  w.model = net.ptr();
  w.optimizer = std::make_unique<FusedAdam>(
      net->parameters(), torch::optim::AdamOptions(orDefault(o.learningRate, 1e-3)));
  w.forward = [net](const torch::Tensor& x) mutable { return net->forward(x); };
  w.loss = [](const torch::Tensor& out, const torch::Tensor& target) {
    return torch::nn::functional::nll_loss(out, target);
  };
  w.train = firstRows(train.images, train.labels, o.limitTrain);
  w.test = firstRows(test.images, test.labels, o.limitTest);
  w.classification = true;
  w.defaultEpochs = 6;
  w.defaultBatchSize = 64;
  return w;
}

Workload buildLinear(const WorkloadOptions& o) {
  const data::RegressionData samples = data::makeSyntheticRegression(2048, o.seed);
  torch::nn::Linear net(20, 1);
  Workload w;
  w.name = "linear";
  w.model = net.ptr();
  w.optimizer = std::make_unique<torch::optim::SGD>(
      net->parameters(), torch::optim::SGDOptions(orDefault(o.learningRate, 1e-3)));
  w.forward = [net](const torch::Tensor& x) mutable { return net->forward(x); };
  w.loss = [](const torch::Tensor& out, const torch::Tensor& target) {
    return torch::nn::functional::mse_loss(out, target);
  };
  w.train = firstRows(samples.inputs, samples.targets, o.limitTrain);
  w.defaultEpochs = 10;
  w.defaultBatchSize = 32;
  return w;
}

}  // namespace

TrainingTask Workload::task() {
  return TrainingTask{.name = name,
                      .model = *model,
                      .forward = forward,
                      .loss = loss,
                      .optimizer = *optimizer,
                      .train = train,
                      .test = test,
                      .classification = classification};
}

Workload buildWorkload(const std::string& name, const WorkloadOptions& options) {
  checkWorkload(name);  // one of workloadNames(), else UsageError naming the nearest
  return name == "mnist" ? buildMnist(options) : buildLinear(options);
}

}  // namespace distrun::train
