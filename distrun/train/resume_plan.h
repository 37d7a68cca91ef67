#pragma once

#include <cstdint>
#include <string>

#include "distrun/train/sampler.h"

// Where a run goes on from a snapshot: the same place, or, on another world
// size mid-epoch, the rest of the epoch split anew. Pure functions over
// DistributedSampler's arithmetic; the Trainer reads and writes the fields.
namespace distrun::train {

// What splits a run's epochs into steps.
struct RunShape {
  int64_t worldSize = 1;
  int64_t batchSize = 1;  // per rank
  int64_t datasetSize = 0;
  bool dropLast = false;
};

// Where a run stands: the epoch to run next, the part of its order this run
// splits (the whole epoch unless it resumed one mid-way), and the steps of
// that part done.
struct EpochPosition {
  int64_t epoch = 0;
  EpochRange range;
  int64_t step = 0;
};

// What a snapshot records of the run that wrote it.
struct SnapshotPosition {
  RunShape shape;    // the writing run's
  EpochPosition at;  // where it stopped
  EpochRange rest;   // what was left of at.epoch: remainingOf(shape, at)
};

// How a run of shape `now` goes on from a snapshot:
// - at an epoch's start, that epoch whole, for any shape;
// - mid-epoch with the same world size, batch size and dropLast, exactly
//   where it stopped (written.at: the same steps, bit for bit);
// - mid-epoch otherwise (resized), written.rest as a part of the epoch of
//   its own, from its step 0: resized is set.
// ConfigError naming `path` and both sizes for a mid-epoch snapshot of
// another training set size (its positions mean nothing in this one).
struct ResumePlan {
  EpochPosition position;
  bool resized = false;
};
ResumePlan planResume(const SnapshotPosition& written, const RunShape& now,
                      const std::string& path);

// The part of at.epoch still to train after `at`
// (DistributedSampler::remainingAfter): begin is the samples of the epoch's
// order consumed, end where `shape`'s epoch ends.
EpochRange remainingOf(const RunShape& shape, const EpochPosition& at);

// True unless `at` is an epoch's start (step 0 of the whole epoch).
bool isMidEpoch(const EpochPosition& at, int64_t datasetSize);

}  // namespace distrun::train
