#pragma once

// The nccl backend (rccl on AMD GPUs): a Communicator on device buffers, one
// rank one GPU, every collective run by NCCL on this communicator's own
// stream. Buffers are device memory of this communicator's GPU (cudaMalloc,
// or a torch tensor's data on cuda:LOCAL_RANK); host pointers are refused by
// NCCL (UsageError). docs/comm.md, "NCCL and RCCL".
//
// Every operation is enqueued on the stream and then waited for: the wait
// polls the stream's event and NCCL's asynchronous error, so that a peer
// that dies or fails becomes CommunicationError and one that stops answering
// TimeoutError after the communicator's timeout, both after ncclCommAbort
// (never a hang in a CUDA call). The asynchronous forms run that wait on the
// base's background thread. Tags of point-to-point calls are not matched
// (NCCL has none): messages between two ranks arrive in issue order.

#include <nccl.h>

#include <chrono>
#include <functional>
#include <string>

#include "distrun/comm/communicator.h"
#include "distrun/comm/gpu/gpu_runtime.h"
#include "distrun/comm/nccl/nccl_library.h"

namespace distrun::comm::nccl {

struct NcclOptions {
  int device = 0;  // the GPU, as the runtime numbers the visible ones
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
};

class NcclCommunicator final : public Communicator {
 public:
  // Joins the NCCL communicator `id` names, as rank `rank` of `size`, on GPU
  // options.device: non-blocking init, polled until it is done, fails or
  // the timeout passes (then aborted: TimeoutError naming the ranks' count).
  NcclCommunicator(int rank, int size, const ncclUniqueId& id, NcclOptions options,
                   const NcclLibrary& nccl, const gpu::GpuRuntime& gpu);
  ~NcclCommunicator() override;

  std::string_view backend() const override { return gpu::backendName(nccl_.vendor); }
  // "nccl 2.28.9 on cuda:0".
  std::string transport() const override;
  int device() const { return options_.device; }
  cudaStream_t stream() const { return stream_; }

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
  void doBarrier() override;
  bool averagesNatively() const override { return true; }

 private:
  // Runs `calls` (NCCL calls enqueued on stream_) and waits until the
  // stream has run them.
  void run(const char* what, const std::function<ncclResult_t()>& calls);
  // Polls until NCCL has enqueued what it was given (`enqueueOnly`: init,
  // a non-blocking group) or the stream has passed done_; an asynchronous
  // error or the deadline throws, after aborting.
  void await(const char* what, bool enqueueOnly);
  [[noreturn]] void fail(const char* what, ncclResult_t result);
  [[noreturn]] void timeOut(const char* what);
  // ncclCommAbort, once: later calls find no communicator.
  void abortNccl() noexcept;
  // Device memory of at least `bytes` for in-place alltoall and barrier.
  void* scratch(size_t bytes);
  void destroy() noexcept;
  std::string deviceName() const;  // "cuda:0"
  std::string where() const;       // "rank 1 of 4, cuda:1"

  NcclOptions options_;
  const NcclLibrary& nccl_;
  const gpu::GpuRuntime& gpu_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  void* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
};

}  // namespace distrun::comm::nccl
