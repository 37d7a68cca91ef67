#pragma once

#include <cstdint>
#include <vector>

namespace distrun::train {

// Splits each step's samples (the union of the ranks' batches) among the
// ranks in proportion to how fast each computed lately, so that a rank on
// a slower CPU gets fewer samples and the ranks reach the all-reduce
// together. Speeds are smoothed over steps (exponential average); until a
// rank has been measured every rank gets an equal share. Every rank holds
// the same balancer and feeds it the same all-gathered measurements, so
// all compute the same split.
class StepBalancer {
 public:
  explicit StepBalancer(int worldSize);

  // Samples per rank for a step of `total`: the shares sum to `total`, each
  // at least 1 when total >= worldSize; equal (to within one) before any
  // measurement.
  std::vector<int64_t> split(int64_t total) const;

  // Each rank's compute seconds per sample in the step just done; a value
  // <= 0 (nothing measured) leaves that rank's estimate as it was.
  void record(const std::vector<double>& secondsPerSample);

 private:
  std::vector<double> speed_;  // samples per second, 0 = not yet measured
};

}  // namespace distrun::train
