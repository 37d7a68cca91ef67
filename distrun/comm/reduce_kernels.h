#pragma once

// The reduction kernels of each instruction set, for reduce.cc to choose
// from (reduce_kernels.inc); avx2 and avx512 exist on x86-64 builds only
// (DISTRUN_REDUCE_X86).

#include <cstddef>

#include "distrun/comm/dtype.h"
#include "distrun/comm/reduce.h"

namespace distrun::comm::detail {

namespace baseline {
ReduceKernel reduceKernel(DataType type, ReduceOp op);
void divideInPlace(void* data, size_t n, DataType type, int divisor);
}  // namespace baseline

namespace avx2 {
ReduceKernel reduceKernel(DataType type, ReduceOp op);
void divideInPlace(void* data, size_t n, DataType type, int divisor);
}  // namespace avx2

namespace avx512 {
ReduceKernel reduceKernel(DataType type, ReduceOp op);
void divideInPlace(void* data, size_t n, DataType type, int divisor);
}  // namespace avx512

}  // namespace distrun::comm::detail
