#pragma once

// For the GPU tests: why this machine cannot run them (CI, a node without
// a GPU), "" where this process sees a CUDA GPU. A test skips with it.

#include <string>

namespace distrun::comm::gpu::testing {

std::string whyNoGpu();

}  // namespace distrun::comm::gpu::testing
