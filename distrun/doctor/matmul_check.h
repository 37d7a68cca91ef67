#pragma once

// The seam of the "matmul" check (checks.h declares checkMatmul), so that
// its verdict is tested without timing anything.
#include <cstddef>
#include <optional>
#include <vector>

#include "distrun/doctor/check_result.h"

namespace distrun::doctor {

// The side of the product checkMatmul times (kMatmulSize squared floats).
inline constexpr size_t kMatmulSize = 512;

// The median of `values` (not empty): the middle one, or the mean of the
// middle two: the straggler check's measure of the nodes' times.
double medianOf(std::vector<double> values);

// The "matmul" result for the product's times in milliseconds (not empty):
// ok with the fastest in detail and in values "matmul_ms"; fail when
// `wrongEntry` names a diagonal entry that came out wrong.
CheckResult matmulVerdict(const std::vector<double>& timesMs, std::optional<size_t> wrongEntry);

}  // namespace distrun::doctor
