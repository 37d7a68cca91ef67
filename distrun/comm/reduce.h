#pragma once

#include <cstddef>

#include "distrun/comm/dtype.h"

namespace distrun::comm {

// Element-wise reduction kernels: out[i] = a[i] OP b[i] for n elements. `out`
// may alias `a` or `b`. Half and bfloat16 are computed in float and rounded
// back once per step. kAvg reduces as kSum (see divideByWorldSize).
using ReduceKernel = void (*)(void* out, const void* a, const void* b, size_t n);
ReduceKernel reduceKernel(DataType type, ReduceOp op);

// data[i] /= divisor for n elements: the second half of kAvg. Integers
// truncate toward zero.
void divideInPlace(void* data, size_t n, DataType type, int divisor);

}  // namespace distrun::comm
