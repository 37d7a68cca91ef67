#include "distrun/train/step_balancer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "distrun/common/enforce.h"

namespace distrun::train {

namespace {

// Weight of the newest step in the smoothed speed: a rank's speed on these
// VMs drifts over stretches of several steps, and one step's figure is off
// by a few per cent.
constexpr double kNewestWeight = 0.3;

}  // namespace

StepBalancer::StepBalancer(int worldSize) : speed_(static_cast<size_t>(worldSize), 0.0) {
  DISTRUN_ENFORCE(worldSize >= 1, "StepBalancer needs at least one rank");
}

void StepBalancer::record(const std::vector<double>& secondsPerSample) {
  DISTRUN_ENFORCE_EQ(secondsPerSample.size(), speed_.size(), "one measurement per rank");
  for (size_t r = 0; r < speed_.size(); ++r) {
    if (!(secondsPerSample[r] > 0)) continue;
    const double now = 1.0 / secondsPerSample[r];
    speed_[r] = speed_[r] > 0 ? (1 - kNewestWeight) * speed_[r] + kNewestWeight * now : now;
  }
}

// Largest remainder: each rank's exact share rounded down, the samples left
// to the largest fractions. With total >= ranks every rank keeps at least
// one sample (its backward joins the all-reduce).
std::vector<int64_t> StepBalancer::split(int64_t total) const {
  const size_t n = speed_.size();
  const bool measured = std::all_of(speed_.begin(), speed_.end(), [](double s) { return s > 0; });
  std::vector<double> weight = measured ? speed_ : std::vector<double>(n, 1.0);
  const double sum = std::accumulate(weight.begin(), weight.end(), 0.0);
  std::vector<int64_t> share(n);
  std::vector<double> fraction(n);
  int64_t given = 0;
  for (size_t r = 0; r < n; ++r) {
    const double exact = static_cast<double>(total) * weight[r] / sum;
    share[r] = static_cast<int64_t>(std::floor(exact));
    fraction[r] = exact - static_cast<double>(share[r]);
    given += share[r];
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return fraction[a] > fraction[b]; });
  for (size_t i = 0; given < total; ++i, ++given) ++share[order[i % n]];
  if (total >= static_cast<int64_t>(n)) {
    for (size_t r = 0; r < n; ++r) {
      while (share[r] < 1) {
        ++share[r];
        --*std::max_element(share.begin(), share.end());
      }
    }
  }
  return share;
}

}  // namespace distrun::train
