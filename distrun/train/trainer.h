#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/types.h>

#include "distrun/comm/communicator.h"
#include "distrun/train/ddp.h"
#include "distrun/train/metrics.h"
#include "distrun/train/progress.h"
#include "distrun/train/resume_plan.h"
#include "distrun/train/sampler.h"
#include "distrun/train/step_balancer.h"

namespace distrun::train {

// Samples as rows of two tensors held in memory.
struct TensorDataset {
  torch::Tensor inputs;
  torch::Tensor targets;
  int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

// What to train: the user's model, its forward and loss, an optimizer over
// the model's parameters, and the data. Every rank builds the same task
// (the same model structure; data identical or at least equally sized).
struct TrainingTask {
  std::string name;  // "mnist", "linear", or the user's
  torch::nn::Module& model;
  std::function<torch::Tensor(const torch::Tensor& inputs)> forward;
  // Mean loss over the batch.
  std::function<torch::Tensor(const torch::Tensor& outputs, const torch::Tensor& targets)> loss;
  torch::optim::Optimizer& optimizer;
  TensorDataset train;
  std::optional<TensorDataset> test;  // evaluated after every epoch
  bool classification = false;        // test accuracy: argmax(outputs) == targets
};

struct TrainerOptions {
  int64_t epochs = 1;
  int64_t batchSize = 32;  // per rank
  uint64_t seed = 0;       // the sampler's shuffle
  bool dropLast = false;
  std::string snapshotPath;     // "" = no snapshots, no resume
  int64_t saveEveryEpochs = 1;  // 0 = never at an epoch's end
  int64_t saveEverySteps = 0;   // 0 = never within an epoch
  std::string metricsPath;      // "" = none
  ProgressStyle progress = ProgressStyle::kAuto;
  int threadsPerRank = 1;  // recorded in the metrics
  // Each step's samples (the union of the ranks' batches) split among the
  // ranks by their measured speed (StepBalancer) instead of each rank
  // taking its own batch; the loss is scaled so that the averaged gradient
  // is still that of the union's mean loss. Which rank computes which
  // sample then depends on timing: not reproducible (dropout draws and the
  // order of floating-point sums differ run to run).
  bool balanceLoad = false;
  DdpOptions ddp;
  // Preemption (docs/training.md, "Preemption"). When set, the flag a
  // SIGUSR1 handler raises: every checkpointCheckEvery steps, at a step's
  // start, the ranks agree on it (a one-int allreduce, max), so that all
  // take the same decision; once any rank saw it set, rank 0 writes the
  // snapshot there and run() returns (checkpointedAt() says where). Without
  // a snapshotPath nothing can be saved: rank 0 says so once on `err` and
  // training goes on, with no collective added.
  const std::atomic<bool>* checkpointRequest = nullptr;
  int64_t checkpointCheckEvery = 1;
};

// Where run() stopped on a checkpoint request: the snapshot's position,
// 0-based epoch and the steps of it done.
struct CheckpointStop {
  int64_t epoch = 0;
  int64_t step = 0;
};

// Trains a task data-parallel over `comm`: DistributedSampler shards (seed +
// epoch shuffle, PyTorch's semantics), DistributedDataParallel gradient
// averaging, rank-0 progress on `out`, metrics JSON, snapshots.
//
// Snapshots hold model, optimizer, next epoch and step, every rank's CPU
// random generator, the epoch's running loss, and the run's shape (world
// size, batch size, training set size, dropLast) with the samples of the
// epoch's order it had consumed; rank 0 writes them (snapshot_file.h:
// atomic, checksummed, previous one kept). run() resumes from the newest
// good snapshot: rank 0 reads it and broadcasts it, so nodes need no shared
// file system. On the same shape it goes on exactly where the snapshot
// stopped; on another world or batch size, at an epoch's end with the next
// epoch and mid-epoch with the rest of the epoch split among this world
// (planResume). A snapshot of another workload, or one taken mid-epoch
// over a training set of another size, is refused (ConfigError).
class Trainer {
 public:
  // Throws UsageError (exit 64) naming the TrainerOptions field and its
  // value when epochs or batchSize is below 1 or a save interval below 0;
  // DataError when the task's training set is empty.
  Trainer(TrainingTask task, comm::Communicator& comm, TrainerOptions options, std::ostream& out,
          std::ostream& err);

  // Collective. First, rank 0 checks that it can write the snapshot and
  // metrics files (checkFileWritable: the folder exists and takes a new
  // file, and holds snapshotBytesNeeded() or 1 MiB free); every rank
  // throws its IoError (exit 74) otherwise, before the first step.
  // Returns the metrics of the epochs this call ran (epochs resumed past
  // are not repeated; the metrics file has them all): none when the
  // resumed snapshot had already finished options.epochs.
  std::vector<EpochMetrics> run();
  const std::vector<EpochMetrics>& history() const { return history_; }
  // CRC-32 of the trained parameters and buffers, the same on every rank
  // (run() checks: EnforceError otherwise). Set by run().
  uint32_t parameterChecksum() const { return checksum_; }

  // Set when run() returned early on a checkpoint request, after the
  // snapshot was written (the epochs after it did not run).
  const std::optional<CheckpointStop>& checkpointedAt() const { return checkpointedAt_; }

  // Where run() began: 0 and 0, or the resumed snapshot's epoch and step;
  // the step counts from the start of startRange(), the part of the
  // epoch's order run() splits: {0, training set size}, or the rest of an
  // epoch resumed mid-way on another shape (then startStep() is 0).
  int64_t startEpoch() const { return resumedAt_.epoch; }
  int64_t startStep() const { return resumedAt_.step; }
  EpochRange startRange() const { return resumedAt_.range; }
  // The snapshot file run() resumed from, if any.
  const std::optional<std::string>& resumedFrom() const { return resumedFrom_; }
  // The free space a snapshot needs: three times the model's parameters
  // and buffers (model, and optimizer state as large as Adam's) + 1 MiB.
  uint64_t snapshotBytesNeeded() const;

 private:
  struct Position {
    int64_t epoch = 0;  // the epoch to run next
    int64_t step = 0;   // steps of `range` already done
    EpochRange range;   // the part of the epoch's order this run splits
    int64_t globalStep = 0;
    double lossSum = 0;  // this rank's loss * samples so far in the epoch
    double samples = 0;
  };

  void checkOutputFiles();
  void resume();
  void saveSnapshot();
  std::string encodeState(const std::vector<std::string>& rngStates,
                          const std::vector<double>& epochTotals);
  void writePosition(torch::serialize::OutputArchive& archive,
                     const std::vector<double>& epochTotals);
  void decodeState(const std::string& payload, const std::string& path);
  int64_t checkResumable(torch::serialize::InputArchive& archive, const std::string& path) const;
  SnapshotPosition readPosition(torch::serialize::InputArchive& archive, int64_t format,
                                const std::string& path) const;
  void restorePosition(torch::serialize::InputArchive& archive, int64_t format,
                       const ResumePlan& plan);
  void restoreRandomState(torch::serialize::InputArchive& archive, int64_t world,
                          const std::string& path);
  RunShape shape() const;
  std::string resumeLine(int64_t steps) const;
  int64_t stepsOf(const DistributedSampler& sampler) const;
  std::optional<EpochMetrics> runEpoch(DistributedSampler& sampler,
                                       const DistributedDataParallel& ddp);
  bool checkpointAgreed();
  void writeCheckpoint();
  DistributedSampler samplerOf(int rank) const;
  std::vector<std::vector<int64_t>> epochShards(const DistributedSampler& mine) const;
  std::vector<int64_t> stepSamples(const std::vector<std::vector<int64_t>>& shards, int64_t step,
                                   double* lossScale);
  double trainStep(const std::vector<int64_t>& indices, double lossScale);
  void startBalancing();
  void recordSpeed(double computeSeconds, int64_t samples);
  void evaluate(EpochMetrics& metrics);
  RunDescription description() const;
  void checkReplicasEqual();

  TrainingTask task_;
  comm::Communicator& comm_;
  TrainerOptions options_;
  std::ostream& out_;
  std::ostream& err_;
  Position position_;
  Position resumedAt_;
  std::vector<EpochMetrics> history_;       // every finished epoch, resumed ones too
  std::optional<std::string> resumedFrom_;  // the snapshot file resumed
  RunShape snapshotShape_;                  // of the run that wrote it
  bool resizedMidEpoch_ = false;            // resumed the rest of an epoch on another shape
  uint32_t checksum_ = 0;
  std::optional<CheckpointStop> checkpointedAt_;
  std::optional<CheckpointStop> lastSaved_;  // the position of the last snapshot written
  bool toldNothingToSave_ = false;
  std::optional<ProgressReporter> progress_;
  std::optional<StepBalancer> balancer_;  // with options_.balanceLoad
  std::shared_ptr<double> speeds_;        // one per rank, in reducible memory
};

}  // namespace distrun::train
