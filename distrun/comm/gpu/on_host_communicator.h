#pragma once

// A communicator on device buffers (nccl, or the staged path) used with host
// buffers: each call's buffers are copied to the GPU (one allocation where
// input and output overlap, so an in-place call stays in place), run
// there, and copied back. For the small host-side exchanges of a GPU job
// (the bench's timings and rank table) and for checking a device backend
// with the contract suite, which reads host memory; not a fast path.

#include <memory>
#include <string>

#include "distrun/comm/communicator.h"
#include "distrun/comm/gpu/gpu_runtime.h"

namespace distrun::comm::gpu {

class OnHostCommunicator final : public Communicator {
 public:
  // `device`: the communicator on buffers of GPU `gpuIndex`; owned, or
  // (the second form) the caller's, outliving this one.
  OnHostCommunicator(std::unique_ptr<Communicator> device, const GpuRuntime& gpu, int gpuIndex);
  OnHostCommunicator(Communicator& device, const GpuRuntime& gpu, int gpuIndex);
  ~OnHostCommunicator() override { shutdown(); }

  std::string_view backend() const override { return device_->backend(); }
  std::string transport() const override { return device_->transport(); }
  Communicator& device() { return *device_; }

 protected:
  bool averagesNatively() const override { return true; }
  void doAllreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) override;
  void doBroadcast(const void* in, void* out, size_t count, DataType type, int root) override;
  void doAllgather(const void* in, void* out, size_t count, DataType type) override;
  void doReduceScatter(const void* in, void* out, size_t count, DataType type,
                       ReduceOp op) override;
  void doAlltoall(const void* in, void* out, size_t count, DataType type) override;
  void doSend(const void* data, size_t count, DataType type, int peer, int tag) override;
  void doRecv(void* data, size_t count, DataType type, int peer, int tag) override;
  void doSendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer, size_t count,
                  DataType type, int tag) override;
  void doBarrier() override { device_->barrier(); }

 private:
  using OnDevice = std::function<void(const void* in, void* out)>;
  // `in` (inBytes; may be null) and `out` (outBytes; may be null) mirrored
  // on the GPU around `run`.
  void mirrored(const void* in, size_t inBytes, void* out, size_t outBytes, const OnDevice& run);
  char* toDevice(const char* host, size_t bytes);
  void toHostAndFree(char* device, char* host, size_t bytes);

  std::unique_ptr<Communicator> owned_;
  Communicator* device_;
  const GpuRuntime& gpu_;
  int gpuIndex_;
};

}  // namespace distrun::comm::gpu
