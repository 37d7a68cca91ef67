#include "distrun/train/resume_plan.h"

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::train {

namespace {

bool sameSplit(const RunShape& a, const RunShape& b) {
  return a.worldSize == b.worldSize && a.batchSize == b.batchSize && a.dropLast == b.dropLast;
}

void checkSameData(const SnapshotPosition& written, const RunShape& now, const std::string& path) {
  if (written.shape.datasetSize == now.datasetSize) return;
  throw ConfigError(fmt::format(
      "snapshot {} was written mid-way through epoch {} of a {}-sample training set, this "
      "run's has {}: the epoch's order cannot go on over other data; resume with the same "
      "training set, or delete it to start afresh",
      path, written.at.epoch + 1, written.shape.datasetSize, now.datasetSize));
}

}  // namespace

bool isMidEpoch(const EpochPosition& at, int64_t datasetSize) {
  return at.step != 0 || at.range != EpochRange{0, datasetSize};
}

EpochRange remainingOf(const RunShape& shape, const EpochPosition& at) {
  DistributedSampler sampler({.datasetSize = shape.datasetSize,
                              .worldSize = static_cast<int>(shape.worldSize),
                              .rank = 0,
                              .shuffle = true,
                              .seed = 0,
                              .dropLast = shape.dropLast});
  sampler.setEpoch(at.epoch, at.range);
  return sampler.remainingAfter(at.step, shape.batchSize);
}

ResumePlan planResume(const SnapshotPosition& written, const RunShape& now,
                      const std::string& path) {
  const int64_t epoch = written.at.epoch;
  if (!isMidEpoch(written.at, written.shape.datasetSize)) {
    return {.position = {.epoch = epoch, .range = {0, now.datasetSize}, .step = 0}};
  }
  checkSameData(written, now, path);
  if (sameSplit(written.shape, now)) return {.position = written.at};
  return {.position = {.epoch = epoch, .range = written.rest, .step = 0}, .resized = true};
}

}  // namespace distrun::train
