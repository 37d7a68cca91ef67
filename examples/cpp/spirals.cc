// Two interleaved spirals, told apart by a small MLP of your own, trained
// data-parallel: every rank runs this program (`distrun run
// --nproc-per-node 2 ./spirals`), each trains on its shard and
// DistributedDataParallel averages the gradients.
#include <cmath>
#include <iostream>

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "distrun/comm/connect.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/train/freed_memory.h"
#include "distrun/train/fused_adam.h"
#include "distrun/train/trainer.h"

namespace {

// n points per spiral, the same on every rank (fixed seed).
distrun::train::TensorDataset spirals(int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  const torch::Tensor t = torch::rand({n}) * 3 * M_PI;
  torch::Tensor points = torch::stack({t * torch::cos(t), t * torch::sin(t)}, 1) / 10;
  points = torch::cat({points, -points}) + 0.05 * torch::randn({2 * n, 2});
  const torch::Tensor labels = torch::cat({torch::zeros({n}), torch::ones({n})}).to(torch::kLong);
  return {points, labels};
}

}  // namespace

int main() try {
  distrun::ProcessEnvironment env;
  distrun::train::keepFreedMemoryForReuse(env);  // each step reuses the last one's memory
  std::unique_ptr<distrun::comm::Communicator> comm = distrun::comm::connect(env);

  torch::manual_seed(0);  // DDP broadcasts rank 0's parameters anyway
  torch::nn::Sequential model(torch::nn::Linear(2, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, 2));
  // torch::optim::Adam with its update in one pass (docs/training.md)
  distrun::train::FusedAdam adam(model->parameters(), torch::optim::AdamOptions(1e-2));

  distrun::train::TrainingTask task{
      .name = "spirals",
      .model = *model,
      .forward = [&](const torch::Tensor& x) { return model->forward(x); },
      .loss = [](const torch::Tensor& out,
                 const torch::Tensor& y) { return torch::nn::functional::cross_entropy(out, y); },
      .optimizer = adam,
      .train = spirals(2000, 1),
      .test = spirals(500, 2),
      .classification = true,
  };
  distrun::train::TrainerOptions options;
  options.epochs = 20;
  options.batchSize = 64;
  options.progress = distrun::train::ProgressStyle::kEpochs;
  distrun::train::Trainer trainer(task, *comm, options, std::cout, std::cerr);
  trainer.run();
  if (comm->rank() == 0) {
    std::cout << "spirals: test accuracy " << *trainer.history().back().testAccuracy * 100 << "%"
              << std::endl;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "spirals: error: " << e.what() << "\n";
  return distrun::toInt(distrun::exitCodeFor(e));
}
