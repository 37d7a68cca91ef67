#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "distrun/train/trainer.h"

namespace distrun::train {

struct WorkloadOptions {
  std::string dataDir = "data";  // holds MNIST/raw (mnist only)
  double learningRate = 0;       // 0: the workload's default
  int64_t limitTrain = 0;        // use the first N training samples; 0: all
  int64_t limitTest = 0;         // use the first N test samples; 0: all
  uint64_t seed = 0;             // synthetic data (linear)
};

// A built-in workload: the model, optimizer and data it owns, and the
// defaults of its command line.
struct Workload {
  std::string name;
  std::shared_ptr<torch::nn::Module> model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> loss;
  TensorDataset train;
  std::optional<TensorDataset> test;
  bool classification = false;
  int64_t defaultEpochs = 1;
  int64_t defaultBatchSize = 32;

  // A task over this workload's parts (which must outlive it).
  TrainingTask task();
};

// "mnist": PyTorch's MNIST example network (pytorch/examples mnist/main.py,
// models::MnistCnn) on DATA/MNIST/raw, Adam (lr 1e-3), NLL loss, 6 epochs
// of batch 64 by default (97.40-97.45% on the 2,000 test digits on 2 ranks, by CPU model: the
// main job); MNIST not found is an IoError that says to pass --data DIR.
// "linear": the Trainer of PyTorch's multi-GPU DDP tutorial, a 20 -> 1
// linear model on 2048 synthetic samples, SGD (lr 1e-3), MSE loss, 10
// epochs of batch 32. The model is built from the current torch seed.
// UsageError for another name; the data loaders' errors otherwise.
Workload buildWorkload(const std::string& name, const WorkloadOptions& options);

}  // namespace distrun::train
