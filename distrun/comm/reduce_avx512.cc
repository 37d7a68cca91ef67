// The reduction kernels for CPUs with AVX-512 F, DQ, BW and VL (reduce_kernels.inc).
#include <cstddef>
#include <cstdint>

#include "distrun/comm/float16_arrays.h"
#include "distrun/comm/reduce_kernels.h"

#define DISTRUN_REDUCE_ISA avx512
#include "distrun/comm/reduce_kernels.inc"
