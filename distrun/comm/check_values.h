#pragma once

#include <cstddef>

#include "distrun/comm/dtype.h"

namespace distrun::comm {

// Values for checking collectives' results, shared by the contract tests and
// `distrun bench`'s #wrong column. Inputs are small integers, so sums and
// products are exact in every type and ranks can compute every expected
// result locally without communicating.

// Element i of a typed array, as a double, and back.
double loadValue(DataType type, const void* base, size_t i);
void storeValue(DataType type, void* base, size_t i, double value);

// Rank `rank`'s input element i for a reduction `op` over `size` ranks:
// sums stay within 2 * size, products are ±1 or ±2, min/max in [-6, 6].
double reductionInput(ReduceOp op, int rank, int size, size_t i);
// The reduction of reductionInput over all ranks (avg divides, truncating
// integers toward zero).
double reductionResult(ReduceOp op, DataType type, int size, size_t i);
// A value naming (source rank, element) for data-movement collectives.
double markerValue(int rank, size_t i);

// The relative tolerance a result may be off by: 0 for integers; for floats
// the rounding of avg's division (float 1e-6, double 1e-12, half 1e-3,
// bfloat16 8e-3).
double tolerance(DataType type);
bool matches(DataType type, double got, double want);

}  // namespace distrun::comm
