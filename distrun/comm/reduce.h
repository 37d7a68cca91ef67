#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "distrun/comm/dtype.h"

namespace distrun::comm {

// Element-wise reduction kernels: out[i] = a[i] OP b[i] for n elements. `out`
// is `a`, `b`, or overlaps neither. Half and bfloat16 are computed in float
// and rounded back once per step. kAvg reduces as kSum (see
// divideByWorldSize).
using ReduceKernel = void (*)(void* out, const void* a, const void* b, size_t n);
ReduceKernel reduceKernel(DataType type, ReduceOp op);

// data[i] /= divisor for n elements: the second half of kAvg. Integers
// truncate toward zero.
void divideInPlace(void* data, size_t n, DataType type, int divisor);

// The instruction sets the kernels above are compiled for, narrowest
// first. Each gives the same bits for every input; the wider ones only go
// faster, where they do (docs/comm.md, bench/reduce-kernels.sh): float,
// double and the integers are bound by memory, and AVX-512 reads and
// writes them no faster than AVX2 in cache and 10-16% slower beyond it,
// while half and bfloat16 are bound by their conversions, which AVX-512
// speeds up 1.13x and 1.33x. So by default those two use the widest this
// CPU runs and the others AVX2 at most; DISTRUN_COMM_SIMD names one for
// every type.
enum class Instructions { kBaseline, kAvx2, kAvx512 };
inline constexpr Instructions kAllInstructions[] = {Instructions::kBaseline, Instructions::kAvx2,
                                                    Instructions::kAvx512};
// "baseline", "avx2", "avx512".
std::string_view instructionsName(Instructions isa);
// The one `name` names; none for another name.
std::optional<Instructions> instructionsNamed(std::string_view name);
// The widest this CPU and build run: avx512 needs AVX-512 F, DQ, BW and VL.
Instructions widestInstructions();
// From now on, for the whole process: `isa` for every type, or none for
// the default above. Throws std::invalid_argument where `isa` is wider
// than widestInstructions().
void useInstructions(std::optional<Instructions> isa);
// What reduceKernel and divideInPlace use for `type`.
Instructions instructionsFor(DataType type);
// In words, for reports: "avx2, avx512 for half and bfloat16", or one name.
std::string reductionInstructions();

// One instruction set's, for tests and benchmarks; `isa` at most
// widestInstructions().
ReduceKernel reduceKernel(Instructions isa, DataType type, ReduceOp op);
void divideInPlace(Instructions isa, void* data, size_t n, DataType type, int divisor);

}  // namespace distrun::comm
