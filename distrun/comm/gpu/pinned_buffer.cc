#include "distrun/comm/gpu/pinned_buffer.h"

namespace distrun::comm::gpu {

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) gpu_->freeHost(data_);
}

char* PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_ && data_ != nullptr) return data_;
  if (data_ != nullptr) gpu_->freeHost(data_);
  data_ = nullptr;
  bytes_ = 0;
  void* data = nullptr;
  gpu_->check(gpu_->hostAlloc(&data, bytes == 0 ? 1 : bytes, cudaHostAllocDefault),
              "cudaHostAlloc");
  data_ = static_cast<char*>(data);
  bytes_ = bytes;
  return data_;
}

}  // namespace distrun::comm::gpu
