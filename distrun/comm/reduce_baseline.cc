// The reduction kernels for any x86-64 (or other) CPU: SSE2 on x86-64 (reduce_kernels.inc).
#include <cstddef>
#include <cstdint>

#include "distrun/comm/float16_arrays.h"
#include "distrun/comm/reduce_kernels.h"

#define DISTRUN_REDUCE_ISA baseline
#include "distrun/comm/reduce_kernels.inc"
