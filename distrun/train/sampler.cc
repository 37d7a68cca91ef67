#include "distrun/train/sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::train {

namespace {

// UsageErrors name the field of DistributedSampler::Options.
void validate(const DistributedSampler::Options& options) {
  if (options.worldSize < 1) {
    throw UsageError(fmt::format(
        "DistributedSampler::Options::worldSize must be at least 1, got {}", options.worldSize));
  }
  if (options.rank < 0 || options.rank >= options.worldSize) {
    throw UsageError(
        fmt::format("DistributedSampler::Options::rank must be 0 to {} (worldSize {}), "
                    "got {}",
                    options.worldSize - 1, options.worldSize, options.rank));
  }
  if (options.datasetSize < 0) {
    throw UsageError(fmt::format(
        "DistributedSampler::Options::datasetSize must be 0 or more, got {}", options.datasetSize));
  }
}

// PyTorch computes ceil((size - world) / world) with dropLast and an uneven
// size: that is size / world rounded down.
int64_t samplesPerRank(const DistributedSampler::Options& options, int64_t size) {
  int64_t world = options.worldSize;
  if (options.dropLast) return size / world;
  return (size + world - 1) / world;
}

void checkRange(EpochRange range, int64_t datasetSize) {
  if (range.begin < 0 || range.begin > range.end || range.end > datasetSize) {
    throw UsageError(
        fmt::format("DistributedSampler::setEpoch: range [{}, {}) must have 0 <= begin <= end <= "
                    "datasetSize ({})",
                    range.begin, range.end, datasetSize));
  }
}

}  // namespace

DistributedSampler::DistributedSampler(const Options& options) : options_(options) {
  validate(options_);
  setEpoch(0);
}

void DistributedSampler::setEpoch(int64_t epoch) { setEpoch(epoch, {0, options_.datasetSize}); }

void DistributedSampler::setEpoch(int64_t epoch, EpochRange rest) {
  checkRange(rest, options_.datasetSize);
  epoch_ = epoch;
  range_ = rest;
  numSamples_ = samplesPerRank(options_, rest.size());
}

std::vector<int64_t> DistributedSampler::epochOrder() const {
  int64_t size = options_.datasetSize;
  std::vector<int64_t> order(static_cast<size_t>(size));
  if (!options_.shuffle) {
    for (int64_t i = 0; i < size; ++i) order[static_cast<size_t>(i)] = i;
    return order;
  }
  // Python's seed + epoch as manual_seed takes it: modulo 2^64.
  at::Generator generator =
      at::detail::createCPUGenerator(options_.seed + static_cast<uint64_t>(epoch_));
  at::Tensor perm = at::randperm(size, generator, at::kLong);
  std::copy_n(perm.data_ptr<int64_t>(), size, order.begin());
  return order;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> order = epochOrder();
  size_t total = static_cast<size_t>(totalSize());
  size_t world = static_cast<size_t>(options_.worldSize);
  const auto begin = static_cast<size_t>(range_.begin);
  const auto size = static_cast<size_t>(range_.size());
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(numSamples_));
  // Position p of the padded (or truncated) list is order[begin + p % size]:
  // the padding repeats the range from its start.
  for (size_t p = static_cast<size_t>(options_.rank); p < total; p += world) {
    mine.push_back(order[begin + p % size]);
  }
  return mine;
}

EpochRange DistributedSampler::remainingAfter(int64_t steps, int64_t batchSize) const {
  if (steps < 0 || batchSize < 1) {
    throw UsageError(fmt::format(
        "DistributedSampler::remainingAfter: expected steps 0 or more and batchSize at least 1, "
        "got {} and {}",
        steps, batchSize));
  }
  // Past the last step every index is trained (and steps * batchSize might
  // overflow there).
  const int64_t each =
      steps >= (numSamples_ + batchSize - 1) / batchSize ? numSamples_ : steps * batchSize;
  const int64_t trained = std::min(each * options_.worldSize, range_.size());
  return {range_.begin + trained, range_.begin + std::min(totalSize(), range_.size())};
}

}  // namespace distrun::train
