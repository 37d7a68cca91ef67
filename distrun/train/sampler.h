#pragma once

#include <cstdint>
#include <vector>

namespace distrun::train {

// PyTorch's torch.utils.data.DistributedSampler, index for index: each of
// `worldSize` ranks gets an equal share of a dataset's indices, the same
// permutation on every rank for a given (seed, epoch).
//
// Per epoch: randperm(datasetSize) from a CPU generator seeded with
// seed + epoch (or 0..datasetSize-1 without shuffling); then, to reach
// totalSize(), the list is padded by repeating it from its start (as often
// as needed) or, with dropLast, truncated; then rank r takes positions
// r, r + worldSize, r + 2*worldSize, ...
//
// A value type; const methods are thread-safe, setEpoch is not.
class DistributedSampler {
 public:
  struct Options {
    int64_t datasetSize = 0;
    int worldSize = 1;
    int rank = 0;
    bool shuffle = true;
    uint64_t seed = 0;
    bool dropLast = false;
  };

  // Throws UsageError (exit 64) naming the Options field and its value
  // when worldSize < 1, rank is outside [0, worldSize) or datasetSize < 0.
  explicit DistributedSampler(const Options& options);

  // Selects the permutation of indices(); call it before every epoch, as
  // with PyTorch's set_epoch, or every epoch sees the same order.
  void setEpoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

  // Indices per rank: ceil(datasetSize / worldSize), or with dropLast
  // floor(datasetSize / worldSize).
  int64_t numSamples() const { return numSamples_; }
  // numSamples() * worldSize.
  int64_t totalSize() const { return numSamples_ * options_.worldSize; }

  // This rank's dataset indices for the current epoch, numSamples() long.
  std::vector<int64_t> indices() const;

 private:
  std::vector<int64_t> epochOrder() const;

  Options options_;
  int64_t numSamples_ = 0;
  int64_t epoch_ = 0;
};

}  // namespace distrun::train
