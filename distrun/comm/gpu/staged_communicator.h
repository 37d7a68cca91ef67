#pragma once

// The host-staged path: distrun's CPU collectives (the gloo backend's shared
// memory within a node, TCP between nodes) on device buffers, through
// pinned host memory. It runs several ranks on one GPU, which NCCL refuses
// ("Duplicate GPU detected"), and jobs on nodes without NCCL
// (docs/comm.md, "The staged path").
//
// allreduce and broadcast go in chunks, pipelined on one stream: while the
// host reduces chunk k, the GPU copies chunk k+1 down and chunk k-1 back
// up, so the copies hide behind the collective. The other operations copy
// their whole input down, run, and copy their output up.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "distrun/comm/communicator.h"
#include "distrun/comm/gpu/gpu_runtime.h"
#include "distrun/comm/gpu/pinned_buffer.h"

namespace distrun::comm::gpu {

struct StagedOptions {
  int device = 0;                // the GPU the buffers are on
  size_t chunkBytes = 4u << 20;  // one stage of the pipelined allreduce and broadcast
};

class StagedCommunicator final : public Communicator {
 public:
  // `host`: a communicator on host memory, every rank of it staged alike;
  // owned, or (the second form) the caller's, outliving this one.
  StagedCommunicator(std::unique_ptr<Communicator> host, const GpuRuntime& gpu,
                     StagedOptions options);
  StagedCommunicator(Communicator& host, const GpuRuntime& gpu, StagedOptions options);
  ~StagedCommunicator() override;

  std::string_view backend() const override { return host_->backend(); }
  // "shared memory, staged through pinned host memory from cuda:0".
  std::string transport() const override;
  Communicator& host() { return *host_; }

 protected:
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
  void doBarrier() override { host_->barrier(); }
  bool averagesNatively() const override { return true; }

 private:
  // What the host does to one staged chunk of `count` elements, in place.
  using OnChunk = std::function<void(char* chunk, size_t count)>;
  // The pipeline over `count` elements of `type`: chunk by chunk, `in`
  // copied down (unless null), `work` run on it, and the result copied up
  // to `out`.
  void pipelined(const void* in, void* out, size_t count, DataType type, const OnChunk& work);
  // Whole buffers: `in` (inBytes, may be null) down to staging, `work`
  // from one staging buffer into the other, the second up to `out`.
  void whole(const void* in, size_t inBytes, void* out, size_t outBytes,
             const std::function<void(const char* hostIn, char* hostOut)>& work);
  void copy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind);
  void record(cudaEvent_t event);
  void waitFor(cudaEvent_t event);

  std::unique_ptr<Communicator> owned_;
  Communicator* host_;
  const GpuRuntime& gpu_;
  StagedOptions options_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t down_[2] = {nullptr, nullptr};  // chunk in staging buffer i has arrived
  PinnedBuffer stage_[2];
};

}  // namespace distrun::comm::gpu
