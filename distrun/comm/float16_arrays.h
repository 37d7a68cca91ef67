#pragma once

#include <cstddef>
#include <string_view>

#include "distrun/comm/dtype.h"

namespace distrun::comm {

// Arrays of the 16-bit float types to and from float, for the reduction
// kernels, which reduce them in float a block at a time. Conversions from
// float round to nearest even, as toHalf and toBFloat16 do, and to float are
// exact. bfloat16 is converted in loops the compiler vectorises (narrowing
// with AVX2 where the CPU has it); half with the CPU's F16C instructions
// where it has them, else element by element in software; each chosen
// once, at first use. The two give the same bits
// for every number; a NaN stays a NaN (F16C keeps its payload's top bits,
// software makes it the quiet NaN with its sign). Thread-safe.
void widen(float* out, const Half* in, size_t n);
void narrow(Half* out, const float* in, size_t n);
void widen(float* out, const BFloat16* in, size_t n);
void narrow(BFloat16* out, const float* in, size_t n);

// "f16c" or "software": how this process converts half arrays.
std::string_view halfConversion();

namespace detail {
// Each way on its own, for tests; the F16C ones return false (converting
// nothing) where this CPU or build lacks F16C.
void widenHalfInSoftware(float* out, const Half* in, size_t n);
void narrowHalfInSoftware(Half* out, const float* in, size_t n);
bool widenHalfWithF16c(float* out, const Half* in, size_t n);
bool narrowHalfWithF16c(Half* out, const float* in, size_t n);
void narrowBFloat16WithoutAvx2(BFloat16* out, const float* in, size_t n);
}  // namespace detail

}  // namespace distrun::comm
