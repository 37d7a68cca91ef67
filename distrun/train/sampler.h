#pragma once

#include <cstdint>
#include <vector>

namespace distrun::train {

// A stretch of one epoch's order (the permutation of seed + epoch, before
// any padding): its positions [begin, end). A whole epoch is
// {0, datasetSize}; an epoch resumed mid-way is the part not yet trained.
struct EpochRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const EpochRange&) const = default;
};

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
// Resuming an epoch mid-way (on this or another world size): setEpoch with
// the EpochRange still to train (remainingAfter() of the sampler that
// trained the first part) splits only order[begin, end), by the same rules,
// as a fresh epoch over those indices would be split: padded by repeating
// the range from its start, or with dropLast truncated. Across the two
// parts every sample of the epoch is trained once (padding aside; with
// dropLast, up to worldSize - 1 of the range's last are dropped).
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
  // Starts at epoch 0, the whole epoch.
  explicit DistributedSampler(const Options& options);

  // Selects the permutation of indices(), the whole epoch; call it before
  // every epoch, as with PyTorch's set_epoch, or every epoch sees the same
  // order.
  void setEpoch(int64_t epoch);
  // The same, for only `rest` of the epoch's order. UsageError naming the
  // range unless 0 <= begin <= end <= datasetSize.
  void setEpoch(int64_t epoch, EpochRange rest);
  int64_t epoch() const { return epoch_; }
  // What setEpoch selected: {0, datasetSize} for a whole epoch.
  EpochRange range() const { return range_; }

  // Indices per rank: ceil(range().size() / worldSize), or with dropLast
  // floor(range().size() / worldSize).
  int64_t numSamples() const { return numSamples_; }
  // numSamples() * worldSize.
  int64_t totalSize() const { return numSamples_ * options_.worldSize; }

  // This rank's dataset indices for the current epoch (range), numSamples()
  // long.
  std::vector<int64_t> indices() const;

  // The range still to train once every rank has trained its first
  // `steps` batches of `batchSize` indices: what a snapshot taken there
  // resumes. The ranks' first m indices together are the first
  // worldSize * m positions of the padded list, a prefix of the order, so
  // begin moves past them (padding repeats what was trained already); end
  // is where this world's epoch ends (with dropLast, before the truncated
  // tail, which it never trains). begin == end when every step is done.
  // UsageError unless steps >= 0 and batchSize >= 1.
  EpochRange remainingAfter(int64_t steps, int64_t batchSize) const;

 private:
  std::vector<int64_t> epochOrder() const;

  Options options_;
  EpochRange range_;
  int64_t numSamples_ = 0;
  int64_t epoch_ = 0;
};

}  // namespace distrun::train
