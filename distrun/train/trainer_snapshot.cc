// Trainer's snapshots: what goes into one, and how a run goes on from one
// (resume_plan.h decides where). trainer.cc has the rest of the Trainer.
#include "distrun/train/trainer.h"

#include <cstring>
#include <mutex>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "distrun/common/error.h"
#include "distrun/trace/trace.h"
#include "distrun/train/snapshot_file.h"
#include "distrun/train/tensor_comm.h"

namespace distrun::train {

namespace {

// 2 records the run's shape and the epoch's part and consumed samples; a
// format-1 snapshot is read as written by this run's shape (resume_plan.h).
constexpr int64_t kSnapshotFormat = 2;

at::Generator cpuGenerator() { return at::detail::getDefaultCPUGenerator(); }

std::string rngStateBytes() {
  at::Generator gen = cpuGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  const torch::Tensor state = gen.get_state();
  return std::string(static_cast<const char*>(state.data_ptr()),
                     static_cast<size_t>(state.nbytes()));
}

void setRngStateBytes(const torch::Tensor& state) {
  at::Generator gen = cpuGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

c10::IValue readValue(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue v;
  archive.read(key, v);
  return v;
}

}  // namespace

// Collective: every rank's random generator state, and the epoch's loss
// and samples summed over the ranks, go into rank 0's file.
void Trainer::saveSnapshot() {
  if (options_.snapshotPath.empty()) return;
  trace::Span traced("snapshot_save");
  lastSaved_ = CheckpointStop{position_.epoch, position_.step};
  const std::vector<std::string> rng = allgatherString(comm_, rngStateBytes());
  std::vector<double> epochTotals = {position_.lossSum, position_.samples};
  allreduceSum(comm_, epochTotals);
  if (comm_.rank() != 0) return;
  writeSnapshotFile(options_.snapshotPath, encodeState(rng, epochTotals));
}

std::string Trainer::encodeState(const std::vector<std::string>& rng,
                                 const std::vector<double>& epochTotals) {
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(kSnapshotFormat));
  archive.write("workload", c10::IValue(task_.name));
  writePosition(archive, epochTotals);
  archive.write("history", c10::IValue(metricsJson(description(), history_)));
  torch::Tensor states =
      torch::empty({comm_.size(), static_cast<int64_t>(rng[0].size())}, torch::kByte);
  for (size_t r = 0; r < rng.size(); ++r) {
    std::memcpy(states[static_cast<int64_t>(r)].data_ptr(), rng[r].data(), rng[r].size());
  }
  archive.write("rng", states);
  torch::serialize::OutputArchive model;
  task_.model.save(model);
  archive.write("model", model);
  torch::serialize::OutputArchive optimizer;
  task_.optimizer.save(optimizer);
  archive.write("optimizer", optimizer);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}

// Where the run stands and its shape. loss_sum and samples are rank 0's (a
// resume on the same shape gives them to every rank, as format 1 did);
// epoch_loss_sum and epoch_samples are every rank's together, for a resumed
// epoch's loss on another shape. samples_consumed and samples_end are the
// rest of the epoch (remainingOf) that another shape goes on with.
void Trainer::writePosition(torch::serialize::OutputArchive& archive,
                            const std::vector<double>& epochTotals) {
  const RunShape now = shape();
  const EpochPosition at{
      .epoch = position_.epoch, .range = position_.range, .step = position_.step};
  const EpochRange rest = remainingOf(now, at);
  const std::vector<std::pair<const char*, c10::IValue>> fields = {
      {"world_size", now.worldSize},
      {"batch_size", now.batchSize},
      {"dataset_size", now.datasetSize},
      {"drop_last", now.dropLast},
      {"epoch", at.epoch},
      {"step", at.step},
      {"range_begin", at.range.begin},
      {"range_end", at.range.end},
      {"samples_consumed", rest.begin},
      {"samples_end", rest.end},
      {"global_step", position_.globalStep},
      {"loss_sum", position_.lossSum},
      {"samples", position_.samples},
      {"epoch_loss_sum", epochTotals[0]},
      {"epoch_samples", epochTotals[1]}};
  for (const auto& [key, value] : fields) archive.write(key, value);
}

void Trainer::decodeState(const std::string& payload, const std::string& path) {
  torch::serialize::InputArchive archive;
  try {
    std::istringstream bytes(payload);
    archive.load_from(bytes);
  } catch (const c10::Error& e) {
    throw DataError(
        fmt::format("snapshot {} holds no training state: {}", path, e.what_without_backtrace()));
  }
  try {
    const int64_t format = checkResumable(archive, path);
    const SnapshotPosition written = readPosition(archive, format, path);
    const ResumePlan plan = planResume(written, shape(), path);
    snapshotShape_ = written.shape;
    resizedMidEpoch_ = plan.resized;
    torch::serialize::InputArchive model;
    archive.read("model", model);
    task_.model.load(model);
    torch::serialize::InputArchive optimizer;
    archive.read("optimizer", optimizer);
    task_.optimizer.load(optimizer);
    restoreRandomState(archive, written.shape.worldSize, path);
    restorePosition(archive, format, plan);
    history_ = parseMetricsEpochs(readValue(archive, "history").toStringRef());
  } catch (const c10::Error& e) {
    throw DataError(fmt::format("snapshot {} does not fit this model and optimizer: {}", path,
                                e.what_without_backtrace()));
  }
}

// The snapshot's format and workload against this run's; returns the
// format.
int64_t Trainer::checkResumable(torch::serialize::InputArchive& archive,
                                const std::string& path) const {
  const int64_t format = readValue(archive, "format").toInt();
  if (format != 1 && format != kSnapshotFormat) {
    throw DataError(
        fmt::format("snapshot {} has format {}: expected 1 or {}", path, format, kSnapshotFormat));
  }
  const std::string workload = readValue(archive, "workload").toStringRef();
  if (workload != task_.name) {
    throw ConfigError(
        fmt::format("snapshot {} was written by a '{}' run, this is a '{}' run: "
                    "resume with the same workload, or delete it to start afresh",
                    path, workload, task_.name));
  }
  return format;
}

// The writing run's shape and where it stopped. Format 1 recorded only the
// world size: the rest of the shape is taken as this run's (as resuming it
// on the same world size always did), and its epoch was whole.
SnapshotPosition Trainer::readPosition(torch::serialize::InputArchive& archive, int64_t format,
                                       const std::string& path) const {
  SnapshotPosition w{.shape = shape(),
                     .at = {.epoch = readValue(archive, "epoch").toInt(),
                            .range = {0, task_.train.size()},
                            .step = readValue(archive, "step").toInt()},
                     .rest = {}};
  w.shape.worldSize = readValue(archive, "world_size").toInt();
  if (format == 1) {
    if (w.shape.worldSize >= 1 && w.at.step >= 0) w.rest = remainingOf(w.shape, w.at);
    return w;
  }
  w.shape.batchSize = readValue(archive, "batch_size").toInt();
  w.shape.datasetSize = readValue(archive, "dataset_size").toInt();
  w.shape.dropLast = readValue(archive, "drop_last").toBool();
  w.at.range = {readValue(archive, "range_begin").toInt(), readValue(archive, "range_end").toInt()};
  w.rest = {readValue(archive, "samples_consumed").toInt(),
            readValue(archive, "samples_end").toInt()};
  const auto within = [&](EpochRange r) {
    return 0 <= r.begin && r.begin <= r.end && r.end <= w.shape.datasetSize;
  };
  if (w.shape.batchSize < 1 || w.at.step < 0 || !within(w.at.range) || !within(w.rest)) {
    throw DataError(fmt::format(
        "snapshot {} holds an impossible position: batch size {}, step {} of samples [{}, {}), "
        "consumed {} of {}, in a {}-sample training set",
        path, w.shape.batchSize, w.at.step, w.at.range.begin, w.at.range.end, w.rest.begin,
        w.rest.end, w.shape.datasetSize));
  }
  return w;
}

// The position `plan` goes on from. Resized mid-epoch, rank 0 carries the
// epoch's loss and samples so far, all old ranks' together (format 1 kept
// rank 0's only: times its world size), so that the epoch's loss is over
// every sample trained in it; the same shape restores rank 0's on every
// rank, as it always did.
void Trainer::restorePosition(torch::serialize::InputArchive& archive, int64_t format,
                              const ResumePlan& plan) {
  position_ = Position{.epoch = plan.position.epoch,
                       .step = plan.position.step,
                       .range = plan.position.range,
                       .globalStep = readValue(archive, "global_step").toInt(),
                       .lossSum = readValue(archive, "loss_sum").toDouble(),
                       .samples = readValue(archive, "samples").toDouble()};
  if (!plan.resized) return;
  if (comm_.rank() != 0) {
    position_.lossSum = position_.samples = 0;
  } else if (format == 1) {
    position_.lossSum *= static_cast<double>(snapshotShape_.worldSize);
    position_.samples *= static_cast<double>(snapshotShape_.worldSize);
  } else {
    position_.lossSum = readValue(archive, "epoch_loss_sum").toDouble();
    position_.samples = readValue(archive, "epoch_samples").toDouble();
  }
}

// Rank 0's line on a resume: where it goes on, and from what.
std::string Trainer::resumeLine(int64_t steps) const {
  const auto ranks = [](int64_t n) { return fmt::format("{} rank{}", n, n == 1 ? "" : "s"); };
  if (resizedMidEpoch_) {
    return fmt::format(
        "resuming epoch {} mid-way at sample {} of {} on {} (snapshot {} written by {}{})",
        position_.epoch + 1, position_.range.begin, position_.range.end, ranks(comm_.size()),
        *resumedFrom_, ranks(snapshotShape_.worldSize),
        snapshotShape_.batchSize == options_.batchSize
            ? ""
            : fmt::format(", batch size {}", snapshotShape_.batchSize));
  }
  return fmt::format(
      "resumed from {}: epoch {}, step {} of {}{}", *resumedFrom_, position_.epoch + 1,
      position_.step, steps,
      snapshotShape_.worldSize == comm_.size()
          ? ""
          : fmt::format(" (written by {} ranks, now {})", snapshotShape_.worldSize, comm_.size()));
}

// Each rank's generator from the snapshot; a rank the writing run did not
// have takes rank (r mod its world size)'s, as all ranks start from one seed.
void Trainer::restoreRandomState(torch::serialize::InputArchive& archive, int64_t world,
                                 const std::string& path) {
  torch::Tensor states;
  archive.read("rng", states);
  if (world < 1 || states.dim() != 2 || states.size(0) != world) {
    throw DataError(fmt::format(
        "snapshot {} does not hold one generator state per rank of its {}-rank run", path, world));
  }
  setRngStateBytes(states[comm_.rank() % world].clone());
}

}  // namespace distrun::train
