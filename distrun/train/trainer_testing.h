#pragma once

// The Trainer's tests' fixture (trainer_test.cc, trainer_snapshot_test.cc):
// runs of `linear` on ranks as threads, what each rank trained, and a
// scratch folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/serialize/input-archive.h>
#include <torch/utils.h>
#include <nlohmann/json.hpp>

#include "distrun/comm/testing/contract.h"
#include "distrun/common/error.h"
#include "distrun/data/test_files.h"
#include "distrun/train/snapshot_file.h"
#include "distrun/train_app/workloads.h"

#include "distrun/train/trainer.h"

namespace distrun::train::trainer_testing {

using comm::Communicator;
using comm::testing::runGlooThreads;

using TaskHook = std::function<void(int rank, TrainingTask& task)>;

// What each rank of a run trained, forward call by forward call (`linear`
// has no test set: every call is a training step): the dataset indices
// (known by their rows' bytes) and the loss times the samples. With
// stopAfter, rank 0's stopAfter-th call raises `stop`, the ranks'
// checkpoint request: the run writes its snapshot and stops at the next
// step's start.
class Recorder {
 public:
  explicit Recorder(int ranks, int64_t stopAfter = 0)
      : calls(static_cast<size_t>(ranks)),
        losses(static_cast<size_t>(ranks)),
        stopAfter_(stopAfter) {
    const torch::Tensor inputs = buildWorkload("linear", {}).train.inputs.contiguous();
    for (int64_t i = 0; i < inputs.size(0); ++i) rows_[bytesOf(inputs[i])] = i;
  }

  TaskHook hook() {
    return [this](int rank, TrainingTask& task) {
      const auto r = static_cast<size_t>(rank);
      task.forward = [this, r, forward = task.forward](const torch::Tensor& x) {
        calls[r].push_back(indicesOf(x));
        if (r == 0 && stopAfter_ > 0 && static_cast<int64_t>(calls[r].size()) == stopAfter_) {
          stop = true;
        }
        return forward(x);
      };
      task.loss = [this, r, loss = task.loss](const torch::Tensor& out, const torch::Tensor& y) {
        torch::Tensor l = loss(out, y);
        losses[r].push_back(l.item<double>() * static_cast<double>(out.size(0)));
        return l;
      };
    };
  }
  std::vector<const std::atomic<bool>*> requests() {
    return std::vector<const std::atomic<bool>*>(calls.size(), &stop);
  }

  // Every rank's indices of its first `steps` calls (all: -1).
  std::vector<int64_t> trained(int64_t steps = -1) const {
    std::vector<int64_t> all;
    for (const auto& rank : calls) {
      const size_t n = steps < 0 ? rank.size() : std::min(rank.size(), static_cast<size_t>(steps));
      for (size_t c = 0; c < n; ++c) all.insert(all.end(), rank[c].begin(), rank[c].end());
    }
    return all;
  }
  // Every rank's loss * samples over its first `steps` calls.
  double lossSum(int64_t steps) const {
    double sum = 0;
    for (const auto& rank : losses) {
      for (size_t c = 0; c < std::min(rank.size(), static_cast<size_t>(steps)); ++c) sum += rank[c];
    }
    return sum;
  }

  std::vector<std::vector<std::vector<int64_t>>> calls;  // [rank][call] -> indices
  std::vector<std::vector<double>> losses;               // [rank][call] -> loss * samples
  std::atomic<bool> stop{false};

 private:
  static std::string bytesOf(const torch::Tensor& row) {
    const torch::Tensor r = row.contiguous();
    return std::string(static_cast<const char*>(r.data_ptr()), r.nbytes());
  }
  std::vector<int64_t> indicesOf(const torch::Tensor& x) const {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < x.size(0); ++i) out.push_back(rows_.at(bytesOf(x[i])));
    return out;
  }

  std::map<std::string, int64_t> rows_;
  int64_t stopAfter_;
};

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tmp_.path(); }

  TrainerOptions options(int64_t epochs) {
    TrainerOptions o;
    o.epochs = epochs;
    o.batchSize = 32;
    o.progress = ProgressStyle::kNone;
    o.snapshotPath = dir_ + "/linear.snap";
    o.metricsPath = dir_ + "/metrics.json";
    return o;
  }

  struct Outcome {
    std::vector<EpochMetrics> ran, history;
    uint32_t checksum = 0;
    int64_t startEpoch = 0, startStep = 0;
    EpochRange startRange;
    std::string progress;  // rank 0's
    std::string error;
    std::vector<std::string> errors;  // every rank's
    std::optional<std::string> resumedFrom;
    std::optional<CheckpointStop> checkpointedAt;  // every rank's must be rank 0's
    std::string err;                               // rank 0's
  };

  // Trains the linear workload (fresh model from `seed`) as a world of one.
  Outcome train(const TrainerOptions& o, const std::string& name = "linear", uint64_t seed = 0) {
    return trainRanks(1, o, name, seed);
  }

  // The same on `ranks` ranks (threads); the outcome is rank 0's.
  // `requests`, when given, is each rank's checkpoint request flag; `hook`,
  // when given, changes each rank's task before it trains.
  Outcome trainRanks(int ranks, const TrainerOptions& o, const std::string& name = "linear",
                     uint64_t seed = 0, std::vector<const std::atomic<bool>*> requests = {},
                     const TaskHook& hook = {}) {
    Outcome outcome;
    std::vector<std::optional<CheckpointStop>> stops(static_cast<size_t>(ranks));
    // The ranks are threads of one process sharing LibTorch's default
    // generator: each seeds it and builds its model while holding this, so
    // that every rank gets the same model and no two draw from it at once.
    std::mutex generator;
    const std::vector<std::string> errors = runGlooThreads(ranks, [&](Communicator& comm) {
      Workload w = [&] {
        std::lock_guard<std::mutex> lock(generator);
        torch::manual_seed(seed);
        return buildWorkload("linear", {});
      }();
      TrainingTask task = w.task();
      task.name = name;
      if (hook) hook(comm.rank(), task);
      std::ostringstream out, err;
      TrainerOptions mine = o;
      if (!requests.empty()) mine.checkpointRequest = requests[static_cast<size_t>(comm.rank())];
      Trainer trainer(task, comm, mine, out, err);
      std::vector<EpochMetrics> ran = trainer.run();
      stops[static_cast<size_t>(comm.rank())] = trainer.checkpointedAt();
      if (comm.rank() != 0) return;
      outcome.checkpointedAt = trainer.checkpointedAt();
      outcome.err = err.str();
      outcome.ran = std::move(ran);
      outcome.history = trainer.history();
      outcome.checksum = trainer.parameterChecksum();
      outcome.startEpoch = trainer.startEpoch();
      outcome.startStep = trainer.startStep();
      outcome.startRange = trainer.startRange();
      outcome.progress = out.str();
      outcome.resumedFrom = trainer.resumedFrom();
    });
    outcome.error = errors[0];
    outcome.errors = errors;
    for (const auto& stop : stops) {
      EXPECT_EQ(stop.has_value(), outcome.checkpointedAt.has_value()) << "the ranks disagree";
    }
    return outcome;
  }

  data::testing::TempDir tmp_;
  std::string dir_;
};

}  // namespace distrun::train::trainer_testing
