#pragma once

// A GpuRuntime whose "device" is this process's memory: cudaMalloc is
// malloc, every copy a memcpy, every stream and event done at once. It lets
// the code above the runtime (the staged path, OnHostCommunicator, the
// bench's buffers) run its real logic, offsets and copies, on a machine
// without a GPU. Tests only.

#include "distrun/comm/gpu/gpu_runtime.h"

namespace distrun::comm::gpu::testing {

const GpuRuntime& hostMemoryRuntime();

}  // namespace distrun::comm::gpu::testing
