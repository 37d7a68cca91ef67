#pragma once

// Page-locked host memory from the GPU runtime (cudaHostAlloc): what the
// staged path copies device buffers through, so that the copies run as DMA
// beside the host's work.

#include <cstddef>

#include "distrun/comm/gpu/gpu_runtime.h"

namespace distrun::comm::gpu {

class PinnedBuffer {
 public:
  explicit PinnedBuffer(const GpuRuntime& gpu) : gpu_(&gpu) {}
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  // At least `bytes` of pinned memory; grows (what it held is lost), never
  // shrinks. Throws SystemError naming cudaHostAlloc.
  char* reserve(size_t bytes);

 private:
  const GpuRuntime* gpu_;
  char* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace distrun::comm::gpu
