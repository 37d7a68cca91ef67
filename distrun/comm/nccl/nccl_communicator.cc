#include "distrun/comm/nccl/nccl_communicator.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::comm::nccl {
namespace {

const char* byteAt(const void* base, size_t block, size_t blockBytes) {
  return static_cast<const char*>(base) + block * blockBytes;
}

// Between polls of a running operation: yields for the first rounds (a
// small collective is done in microseconds), then sleeps 50 us a round.
void pause(unsigned round) {
  constexpr unsigned kYieldRounds = 2000;
  if (round < kYieldRounds) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

NcclCommunicator::NcclCommunicator(int rank, int size, const ncclUniqueId& id, NcclOptions options,
                                   const NcclLibrary& nccl, const gpu::GpuRuntime& gpu)
    : Communicator(rank, size), options_(options), nccl_(nccl), gpu_(gpu) {
  try {
    gpu_.check(gpu_.setDevice(options_.device), "cudaSetDevice");
    gpu_.check(gpu_.streamCreateWithFlags(&stream_, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags");
    gpu_.check(gpu_.eventCreateWithFlags(&done_, cudaEventDisableTiming),
               "cudaEventCreateWithFlags");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t started = nccl_.commInitRankConfig(&comm_, size, id, rank, &config);
    if (started != ncclSuccess && started != ncclInProgress) fail("init", started);
    await("init", true);
  } catch (...) {
    destroy();
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  shutdown();
  destroy();
}

std::string NcclCommunicator::transport() const {
  return fmt::format("{} {} on {}", backend(), nccl_.versionText(), deviceName());
}

std::string NcclCommunicator::deviceName() const { return gpu_.deviceName(options_.device); }

std::string NcclCommunicator::where() const {
  return fmt::format("rank {} of {}, {}", rank(), size(), deviceName());
}

void NcclCommunicator::run(const char* what, const std::function<ncclResult_t()>& calls) {
  // The background thread of the asynchronous forms has a device of its own.
  gpu_.check(gpu_.setDevice(options_.device), "cudaSetDevice");
  const ncclResult_t enqueued = calls();
  if (enqueued == ncclInProgress) {
    await(what, true);
  } else if (enqueued != ncclSuccess) {
    fail(what, enqueued);
  }
  gpu_.check(gpu_.eventRecord(done_, stream_), "cudaEventRecord");
  await(what, false);
}

void NcclCommunicator::await(const char* what, bool enqueueOnly) {
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (unsigned round = 0;; ++round) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t asked = nccl_.commGetAsyncError(comm_, &state);
    if (asked != ncclSuccess) fail(what, asked);
    if (state != ncclSuccess && state != ncclInProgress) fail(what, state);
    if (enqueueOnly) {
      if (state == ncclSuccess) return;
    } else {
      const cudaError_t passed = gpu_.eventQuery(done_);
      if (passed == cudaSuccess) return;
      if (passed != cudaErrorNotReady) gpu_.check(passed, "cudaEventQuery");
    }
    if (std::chrono::steady_clock::now() >= deadline) timeOut(what);
    pause(round);
  }
}

void NcclCommunicator::fail(const char* what, ncclResult_t result) {
  const std::string why = nccl_.describe(result, comm_);
  const bool init = std::string_view(what) == "init";
  if (result == ncclInvalidArgument || result == ncclInvalidUsage) {
    // At init, NCCL's "Duplicate GPU detected"; later, a host pointer or a
    // size NCCL refuses, before anything was sent.
    if (init) abortNccl();
    throw UsageError(fmt::format(
        "{} {} ({}): {}; {}", backend(), what, where(), why,
        init ? "several ranks on one GPU? NCCL before 2.30 gives each rank its own: share one "
               "through the gloo backend (staged through host memory)"
             : "buffers must be device memory of this GPU"));
  }
  abortNccl();
  const std::string message =
      fmt::format("{} {} ({}): {}; the communicator was aborted", backend(), what, where(), why);
  if (result == ncclUnhandledCudaError) throw SystemError(ExitCode::kSystem, message);
  throw CommunicationError(message);
}

void NcclCommunicator::abortNccl() noexcept {
  if (comm_ != nullptr) nccl_.commAbort(comm_);
  comm_ = nullptr;
}

void NcclCommunicator::timeOut(const char* what) {
  abortNccl();
  throw TimeoutError(fmt::format(
      "{} {} ({}): not done after {:g} s (a peer stopped, left or never came); the communicator "
      "was aborted",
      backend(), what, where(), std::chrono::duration<double>(options_.timeout).count()));
}

void NcclCommunicator::destroy() noexcept {
  if (comm_ != nullptr) {
    // A healthy communicator is finalized (the peers' last operations
    // flushed), then destroyed; one that does not finish in time is aborted.
    try {
      if (nccl_.commFinalize(comm_) == ncclInProgress) await("finalize", true);
      nccl_.commDestroy(comm_);
    } catch (const std::exception&) {
    }
    comm_ = nullptr;
  }
  if (scratch_ != nullptr) gpu_.free(scratch_);
  if (done_ != nullptr) gpu_.eventDestroy(done_);
  if (stream_ != nullptr) gpu_.streamDestroy(stream_);
  scratch_ = nullptr;
  done_ = nullptr;
  stream_ = nullptr;
}

void* NcclCommunicator::scratch(size_t bytes) {
  if (bytes <= scratchBytes_) return scratch_;
  gpu_.check(gpu_.setDevice(options_.device), "cudaSetDevice");
  if (scratch_ != nullptr) gpu_.check(gpu_.free(scratch_), "cudaFree");
  scratch_ = nullptr;
  scratchBytes_ = 0;
  gpu_.check(gpu_.malloc(&scratch_, bytes), "cudaMalloc");
  scratchBytes_ = bytes;
  return scratch_;
}

void NcclCommunicator::doAllreduce(const void* in, void* out, size_t count, DataType type,
                                   ReduceOp op) {
  run("allreduce",
      [&] { return nccl_.allReduce(in, out, count, toNccl(type), toNccl(op), comm_, stream_); });
}

void NcclCommunicator::doBroadcast(const void* in, void* out, size_t count, DataType type,
                                   int root) {
  run("broadcast",
      [&] { return nccl_.broadcast(in, out, count, toNccl(type), root, comm_, stream_); });
}

void NcclCommunicator::doAllgather(const void* in, void* out, size_t count, DataType type) {
  run("allgather", [&] { return nccl_.allGather(in, out, count, toNccl(type), comm_, stream_); });
}

void NcclCommunicator::doReduceScatter(const void* in, void* out, size_t count, DataType type,
                                       ReduceOp op) {
  run("reduce_scatter", [&] {
    return nccl_.reduceScatter(in, out, count, toNccl(type), toNccl(op), comm_, stream_);
  });
}

// Grouped sends and receives, one pair a peer (RCCL has them as NCCL does;
// ncclAlltoAll is NCCL 2.28's only). In place, the input is copied aside
// first: a block received could otherwise overwrite one not yet sent.
void NcclCommunicator::doAlltoall(const void* in, void* out, size_t count, DataType type) {
  const size_t blockBytes = count * sizeOf(type);
  const void* send = in;
  if (in == out) {
    void* copy = scratch(blockBytes * static_cast<size_t>(size()));
    gpu_.check(gpu_.memcpyAsync(copy, in, blockBytes * static_cast<size_t>(size()),
                                cudaMemcpyDeviceToDevice, stream_),
               "cudaMemcpyAsync");
    send = copy;
  }
  run("alltoall", [&] {
    nccl_.groupStart();
    for (int peer = 0; peer < size(); ++peer) {
      const auto block = static_cast<size_t>(peer);
      nccl_.send(byteAt(send, block, blockBytes), count, toNccl(type), peer, comm_, stream_);
      nccl_.recv(const_cast<char*>(byteAt(out, block, blockBytes)), count, toNccl(type), peer,
                 comm_, stream_);
    }
    return nccl_.groupEnd();
  });
}

void NcclCommunicator::doSend(const void* data, size_t count, DataType type, int peer,
                              int /*tag*/) {
  run("send", [&] { return nccl_.send(data, count, toNccl(type), peer, comm_, stream_); });
}

void NcclCommunicator::doRecv(void* data, size_t count, DataType type, int peer, int /*tag*/) {
  run("recv", [&] { return nccl_.recv(data, count, toNccl(type), peer, comm_, stream_); });
}

void NcclCommunicator::doSendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer,
                                  size_t count, DataType type, int /*tag*/) {
  run("send_recv", [&] {
    nccl_.groupStart();
    nccl_.send(sendData, count, toNccl(type), sendPeer, comm_, stream_);
    nccl_.recv(recvData, count, toNccl(type), recvPeer, comm_, stream_);
    return nccl_.groupEnd();
  });
}

// An allreduce of one integer on the device: returns once every rank's has
// been summed, so once every rank has entered.
void NcclCommunicator::doBarrier() {
  void* flag = scratch(sizeof(int32_t));
  run("barrier",
      [&] { return nccl_.allReduce(flag, flag, 1, ncclInt32, ncclSum, comm_, stream_); });
}

}  // namespace distrun::comm::nccl
