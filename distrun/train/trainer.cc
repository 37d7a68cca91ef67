#include "distrun/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include <zlib.h>

#include <fmt/format.h>
#include <torch/utils.h>

#include "distrun/common/enforce.h"
#include "distrun/common/error.h"
#include "distrun/common/progress_report.h"
#include "distrun/common/writable_file.h"
#include "distrun/trace/trace.h"
#include "distrun/train/sampler.h"
#include "distrun/train/snapshot_file.h"
#include "distrun/train/step_status.h"
#include "distrun/train/tensor_comm.h"

namespace distrun::train {

namespace {

constexpr int64_t kEvalBatch = 1000;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

uLong crc32Of(uLong crc, const torch::Tensor& tensor) {
  const torch::Tensor t = tensor.contiguous();
  return ::crc32(crc, static_cast<const Bytef*>(t.data_ptr()), static_cast<uInt>(t.nbytes()));
}

// UsageError naming the TrainerOptions field: the library's words, not
// distrun-train's flags (which it checks itself, naming them).
void checkAtLeast(const char* field, int64_t value, int64_t least, const char* expected) {
  if (value < least) {
    throw UsageError(fmt::format("TrainerOptions::{} must be {}, got {}", field, expected, value));
  }
}

// Rank 0 decides; the others get its outcome: 0 nothing, 1 a payload, or
// the exit code and message of its error.
struct Broadcast {
  int64_t status = 0;
  std::string text;
};

// Collective: rank 0 runs `decide` and every rank gets its outcome. An
// Error there is thrown on every rank with its exit code, so that no rank
// waits for a peer that gave up. The other ranks print "rank 0: MESSAGE"
// to `err` before rank 0 ends (its launcher then stops them, and a rank
// still unwinding would be stopped silent) and throw it as reported.
template <class Decide>
Broadcast decideOnRankZero(comm::Communicator& comm, std::ostream& err, Decide decide) {
  Broadcast b;
  if (comm.rank() == 0) {
    try {
      b = decide();
    } catch (const Error& e) {
      b = {-static_cast<int64_t>(toInt(e.exitCode())), e.what()};
    }
  }
  b.status = broadcastValue(comm, b.status, 0);
  if (b.status == 0) return b;
  b.text = broadcastString(comm, b.text, 0);
  if (b.status < 0) {
    const auto code = static_cast<ExitCode>(-b.status);
    if (comm.rank() != 0) err << kErrorPrefix << "rank 0: " << b.text << std::endl;
    comm.barrier();
    if (comm.rank() == 0) throw Error(code, b.text);
    throw ReportedError(code, "rank 0: " + b.text);
  }
  return b;
}

// Free space a --metrics file, or a snapshot beyond its model, must find.
constexpr uint64_t kOutputFileSlack = uint64_t{1} << 20;

}  // namespace

Trainer::Trainer(TrainingTask task, comm::Communicator& comm, TrainerOptions options,
                 std::ostream& out, std::ostream& err)
    : task_(std::move(task)), comm_(comm), options_(std::move(options)), out_(out), err_(err) {
  checkAtLeast("epochs", options_.epochs, 1, "at least 1");
  checkAtLeast("batchSize", options_.batchSize, 1, "at least 1");
  checkAtLeast("saveEveryEpochs", options_.saveEveryEpochs, 0, "0 (never) or more");
  checkAtLeast("saveEverySteps", options_.saveEverySteps, 0, "0 (never) or more");
  checkAtLeast("checkpointCheckEvery", options_.checkpointCheckEvery, 1, "at least 1");
  if (task_.train.size() == 0) {
    throw DataError(fmt::format("{}: the training set is empty", task_.name));
  }
  position_.range = {0, task_.train.size()};
}

std::vector<EpochMetrics> Trainer::run() {
  checkOutputFiles();
  resume();
  if (position_.epoch >= options_.epochs) {  // a finished snapshot: nothing to train
    checkReplicasEqual();
    return {};
  }
  DistributedDataParallel ddp(task_.model, comm_, options_.ddp);  // averages through hooks
  DistributedSampler sampler = samplerOf(comm_.rank());
  sampler.setEpoch(position_.epoch, position_.range);
  if (options_.balanceLoad && comm_.size() > 1) startBalancing();
  if (comm_.rank() == 0) {
    progress_.emplace(out_, options_.progress, options_.epochs, stepsOf(sampler));
    if (resumedFrom_) progress_->message(resumeLine(stepsOf(sampler)));
  }
  std::vector<EpochMetrics> ran;
  while (position_.epoch < options_.epochs) {
    std::optional<EpochMetrics> m = runEpoch(sampler, ddp);
    if (!m) return ran;  // checkpointed on request
    ran.push_back(*m);
  }
  checkReplicasEqual();
  return ran;
}

// DDP's promise, checked once at the end: CRC-32 of every parameter and
// buffer byte, equal on every rank.
void Trainer::checkReplicasEqual() {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  for (const torch::Tensor& t : task_.model.parameters()) crc = crc32Of(crc, t);
  for (const torch::Tensor& t : task_.model.buffers()) crc = crc32Of(crc, t);
  checksum_ = static_cast<uint32_t>(crc);
  const std::vector<int64_t> all = allgatherValue(comm_, checksum_);
  for (size_t r = 0; r < all.size(); ++r) {
    DISTRUN_ENFORCE_EQ(all[r], all[0], "parameters of rank ", r,
                       " differ from rank 0's after training");
  }
}

std::optional<EpochMetrics> Trainer::runEpoch(DistributedSampler& sampler,
                                              const DistributedDataParallel& ddp) {
  sampler.setEpoch(position_.epoch, position_.range);
  const int64_t stepsPerEpoch = stepsOf(sampler);
  if (progress_) progress_->setStepsPerEpoch(stepsPerEpoch);
  const std::vector<std::vector<int64_t>> shards = epochShards(sampler);
  task_.model.train();
  comm_.barrier();
  const double syncedBefore = ddp.stats().totalWaitSeconds;
  const Clock::time_point start = Clock::now();
  int64_t samples = 0;
  for (int64_t s = position_.step; s < stepsPerEpoch; ++s) {
    const trace::StepSpan traced(position_.epoch + 1, s + 1, position_.globalStep + 1);
    if (checkpointAgreed()) {
      writeCheckpoint();
      return std::nullopt;
    }
    double lossScale = 1;
    const std::vector<int64_t> batch = stepSamples(shards, s, &lossScale);
    const double untilGradients = trainStep(batch, lossScale);
    if (balancer_) {
      recordSpeed(untilGradients - ddp.stats().lastWaitSeconds, static_cast<int64_t>(batch.size()));
    }
    samples += static_cast<int64_t>(batch.size());
    position_.step = s + 1;
    ++position_.globalStep;
    reportProgress();  // to the agent, for --hang-timeout
    reportStep({position_.epoch, options_.epochs, s + 1, stepsPerEpoch, position_.lossSum,
                position_.samples, samples, comm_.size(), secondsSince(start)});  // status line
    if (progress_) progress_->step(position_.epoch, s + 1, position_.lossSum / position_.samples);
    if (options_.saveEverySteps > 0 && position_.globalStep % options_.saveEverySteps == 0) {
      saveSnapshot();
    }
  }
  EpochMetrics m;
  m.seconds = secondsSince(start);  // the slowest rank's
  comm_.allreduce(&m.seconds, &m.seconds, 1, comm::DataType::kFloat64, comm::ReduceOp::kMax);
  const double synced = ddp.stats().totalWaitSeconds - syncedBefore;
  m.syncSeconds.resize(static_cast<size_t>(comm_.size()));
  comm_.allgather(&synced, m.syncSeconds.data(), 1, comm::DataType::kFloat64);
  std::vector<double> totals = {position_.lossSum, position_.samples, static_cast<double>(samples)};
  allreduceSum(comm_, totals);
  m.epoch = position_.epoch + 1;
  m.trainLoss = totals[0] / totals[1];
  m.samplesPerSecond = totals[2] / std::max(m.seconds, 1e-9);  // every rank's samples
  evaluate(m);
  history_.push_back(m);
  position_ = Position{.epoch = position_.epoch + 1,
                       .step = 0,
                       .range = {0, task_.train.size()},
                       .globalStep = position_.globalStep,
                       .lossSum = 0,
                       .samples = 0};
  if (options_.saveEveryEpochs > 0 && position_.epoch % options_.saveEveryEpochs == 0) {
    saveSnapshot();
  }
  if (comm_.rank() == 0) {
    progress_->epochDone(m);
    if (!options_.metricsPath.empty())
      writeMetricsFile(options_.metricsPath, description(), history_);
  }
  return m;
}

// This run's steps of the sampler's current range.
int64_t Trainer::stepsOf(const DistributedSampler& sampler) const {
  return (sampler.numSamples() + options_.batchSize - 1) / options_.batchSize;
}

RunShape Trainer::shape() const {
  return {.worldSize = comm_.size(),
          .batchSize = options_.batchSize,
          .datasetSize = task_.train.size(),
          .dropLast = options_.dropLast};
}

DistributedSampler Trainer::samplerOf(int rank) const {
  return DistributedSampler({.datasetSize = task_.train.size(),
                             .worldSize = comm_.size(),
                             .rank = rank,
                             .shuffle = true,
                             .seed = options_.seed,
                             .dropLast = options_.dropLast});
}

// The epoch's shards: this rank's, or with balancing every rank's in rank
// order (a step then draws on the union of the ranks' batches).
std::vector<std::vector<int64_t>> Trainer::epochShards(const DistributedSampler& mine) const {
  if (!balancer_) return {mine.indices()};
  std::vector<std::vector<int64_t>> shards;
  for (int r = 0; r < comm_.size(); ++r) {
    DistributedSampler sampler = samplerOf(r);
    sampler.setEpoch(mine.epoch(), mine.range());
    shards.push_back(sampler.indices());
  }
  return shards;
}

// Step `step`'s samples for this rank: its own batch, or with balancing
// its share of the union of all ranks' batches, taken in rank order. The
// loss is then scaled by share * ranks / union, so that DDP's average of
// the ranks' gradients is the gradient of the mean loss over the union.
std::vector<int64_t> Trainer::stepSamples(const std::vector<std::vector<int64_t>>& shards,
                                          int64_t step, double* lossScale) {
  std::vector<int64_t> all;
  for (const std::vector<int64_t>& shard : shards) {
    const auto size = static_cast<int64_t>(shard.size());
    const int64_t first = std::min(step * options_.batchSize, size);
    const int64_t last = std::min(first + options_.batchSize, size);
    all.insert(all.end(), shard.begin() + first, shard.begin() + last);
  }
  *lossScale = 1;
  if (!balancer_) return all;
  const std::vector<int64_t> share = balancer_->split(static_cast<int64_t>(all.size()));
  const auto rank = static_cast<size_t>(comm_.rank());
  const int64_t begin = std::accumulate(share.begin(), share.begin() + comm_.rank(), int64_t{0});
  *lossScale = static_cast<double>(share[rank] * comm_.size()) / static_cast<double>(all.size());
  return {all.begin() + begin, all.begin() + begin + share[rank]};
}

// Collective: the balancer, and one number per rank in the communicator's
// reducible memory for the speeds it is fed.
void Trainer::startBalancing() {
  balancer_.emplace(comm_.size());
  speeds_ = std::static_pointer_cast<double>(
      comm_.allocateReducible(static_cast<size_t>(comm_.size()) * sizeof(double)));
}

// This rank's compute seconds per sample, all-gathered (in place, in
// reducible memory) into the balancer.
void Trainer::recordSpeed(double computeSeconds, int64_t samples) {
  const auto ranks = static_cast<size_t>(comm_.size());
  double* each = speeds_.get();
  std::fill(each, each + ranks, 0.0);
  each[comm_.rank()] = computeSeconds / static_cast<double>(std::max<int64_t>(samples, 1));
  comm_.allreduce(each, ranks, comm::ReduceOp::kSum);
  balancer_->record(std::vector<double>(each, each + ranks));
}

// Returns the seconds from its start to the end of backward (DDP's wait
// for the averaged gradients included).
double Trainer::trainStep(const std::vector<int64_t>& indices, double lossScale) {
  const Clock::time_point start = Clock::now();
  trace::Span data("data", "train", trace::Thread::kData);
  const torch::Tensor index = torch::tensor(indices, torch::kLong);
  const torch::Tensor inputs = task_.train.inputs.index_select(0, index);
  const torch::Tensor targets = task_.train.targets.index_select(0, index);
  data.arg("samples", indices.size()).end();
  task_.optimizer.zero_grad();
  trace::Span forward("forward");
  torch::Tensor loss = task_.loss(task_.forward(inputs), targets);
  forward.end();
  trace::Span backward("backward");
  (lossScale == 1 ? loss : loss * lossScale).backward();
  backward.end();
  const double untilGradients = secondsSince(start);
  trace::Span optimizer("optimizer");
  task_.optimizer.step();
  optimizer.end();
  const auto n = static_cast<double>(indices.size());
  position_.lossSum += loss.item<double>() * n;
  position_.samples += n;
  return untilGradients;
}

// The test set in rank-strided shards without padding, so every sample
// counts once; sums all-reduced.
void Trainer::evaluate(EpochMetrics& m) {
  if (!task_.test) return;
  trace::Span traced("evaluate");
  torch::NoGradGuard noGrad;
  task_.model.eval();
  const TensorDataset& test = *task_.test;
  const torch::Tensor mine = torch::arange(comm_.rank(), test.size(), comm_.size(), torch::kLong);
  std::vector<double> sums = {0, 0, static_cast<double>(mine.numel())};
  for (int64_t at = 0; at < mine.numel(); at += kEvalBatch) {
    const torch::Tensor index = mine.narrow(0, at, std::min(kEvalBatch, mine.numel() - at));
    const torch::Tensor targets = test.targets.index_select(0, index);
    const torch::Tensor outputs = task_.forward(test.inputs.index_select(0, index));
    sums[0] += task_.loss(outputs, targets).item<double>() * static_cast<double>(index.numel());
    if (task_.classification) sums[1] += outputs.argmax(1).eq(targets).sum().item<double>();
  }
  allreduceSum(comm_, sums);
  m.testLoss = sums[0] / sums[2];
  if (task_.classification) m.testAccuracy = sums[1] / sums[2];
  task_.model.train();
}

RunDescription Trainer::description() const {
  return RunDescription{.workload = task_.name,
                        .runtime = "distrun",
                        .worldSize = comm_.size(),
                        .batchSize = options_.batchSize,
                        .threadsPerRank = options_.threadsPerRank};
}

// Collective when it reads the flag: every rank takes the same decision at
// the same step, whichever ranks the signal reached (and when).
bool Trainer::checkpointAgreed() {
  if (options_.checkpointRequest == nullptr) return false;
  if (options_.snapshotPath.empty()) {
    if (!toldNothingToSave_ && options_.checkpointRequest->load() && comm_.rank() == 0) {
      toldNothingToSave_ = true;
      if (progress_) progress_->clearBar();
      err_ << "distrun-train: SIGUSR1: no --snapshot, so nothing can be saved: training goes on "
              "(the job will end at its time limit and not be requeued)"
           << std::endl;
    }
    return false;
  }
  if (position_.globalStep % options_.checkpointCheckEvery != 0) return false;
  int32_t asked = options_.checkpointRequest->load() ? 1 : 0;
  comm_.allreduce(&asked, &asked, 1, comm::DataType::kInt32, comm::ReduceOp::kMax);
  return asked != 0;
}

// The snapshot of where the ranks agreed to stop, unless the scheduled one
// was just written there.
void Trainer::writeCheckpoint() {
  const CheckpointStop here{position_.epoch, position_.step};
  if (!lastSaved_ || lastSaved_->epoch != here.epoch || lastSaved_->step != here.step) {
    saveSnapshot();
  }
  checkpointedAt_ = here;
  if (progress_) progress_->clearBar();
}

// Rank 0 removes what interrupted writes left, finds the newest good
// snapshot and broadcasts it (or its error); every rank restores from the
// same bytes.
void Trainer::resume() {
  if (options_.snapshotPath.empty()) return;
  trace::Span traced("snapshot_load");
  std::string path;
  Broadcast found = decideOnRankZero(comm_, err_, [&] {
    removeInterruptedWrites(options_.snapshotPath, err_);
    std::optional<FoundSnapshot> snapshot = findLatestSnapshot(options_.snapshotPath, err_);
    if (!snapshot) return Broadcast{};
    path = snapshot->path;
    return Broadcast{1, std::move(snapshot->payload)};
  });
  if (found.status == 0) return;
  path = broadcastString(comm_, path, 0);
  decodeState(found.text, path);
  resumedFrom_ = path;
  resumedAt_ = position_;
}

// Collective: rank 0, which writes both files, checks before the first
// step that it can; every rank stops with its error otherwise.
void Trainer::checkOutputFiles() {
  if (options_.snapshotPath.empty() && options_.metricsPath.empty()) return;
  decideOnRankZero(comm_, err_, [this] {
    if (!options_.snapshotPath.empty()) {
      checkFileWritable(options_.snapshotPath, "--snapshot", snapshotBytesNeeded());
    }
    if (!options_.metricsPath.empty()) {
      checkFileWritable(options_.metricsPath, "--metrics", kOutputFileSlack);
    }
    return Broadcast{};
  });
}

// The model's parameters and buffers three times over (the model, and up
// to two running averages per parameter in the optimizer's state, as
// Adam keeps), plus kOutputFileSlack for the rest.
uint64_t Trainer::snapshotBytesNeeded() const {
  uint64_t model = 0;
  for (const torch::Tensor& t : task_.model.parameters()) model += t.nbytes();
  for (const torch::Tensor& t : task_.model.buffers()) model += t.nbytes();
  return 3 * model + kOutputFileSlack;
}

}  // namespace distrun::train
