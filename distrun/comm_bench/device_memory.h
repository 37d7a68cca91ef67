#pragma once

// Where `distrun bench --device cuda` keeps its buffers: a GPU's memory,
// filled and checked through copies of host arrays. The CPU bench has none
// (CollectiveRun's buffers are then its host arrays).

#include <cstddef>
#include <string>

namespace distrun::comm_bench {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // `bytes` (at least 1) of device memory; throws naming the runtime's call.
  virtual char* allocate(size_t bytes) = 0;
  virtual void release(char* device) noexcept = 0;
  virtual void upload(char* device, const char* host, size_t bytes) = 0;
  virtual void download(char* host, const char* device, size_t bytes) = 0;
  virtual void copy(char* to, const char* from, size_t bytes) = 0;  // device to device
  // The bench table's device column: "cuda:0 [0000:17:00.0]".
  virtual std::string describe() const = 0;
};

}  // namespace distrun::comm_bench
