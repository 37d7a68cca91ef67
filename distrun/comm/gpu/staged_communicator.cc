#include "distrun/comm/gpu/staged_communicator.h"

#include <algorithm>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::comm::gpu {
namespace {

const char* at(const void* base, size_t offset) { return static_cast<const char*>(base) + offset; }
char* at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }

}  // namespace

StagedCommunicator::StagedCommunicator(std::unique_ptr<Communicator> host, const GpuRuntime& gpu,
                                       StagedOptions options)
    : StagedCommunicator(*host, gpu, options) {
  owned_ = std::move(host);
}

StagedCommunicator::StagedCommunicator(Communicator& host, const GpuRuntime& gpu,
                                       StagedOptions options)
    : Communicator(host.rank(), host.size()),
      host_(&host),
      gpu_(gpu),
      options_(options),
      stage_{PinnedBuffer{gpu}, PinnedBuffer{gpu}} {
  if (options_.chunkBytes < 64) {
    throw UsageError(
        fmt::format("staged path: chunks of {} bytes (expected at least 64)", options_.chunkBytes));
  }
  gpu_.check(gpu_.setDevice(options_.device), "cudaSetDevice");
  gpu_.check(gpu_.streamCreateWithFlags(&stream_, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags");
  for (cudaEvent_t* event : {&down_[0], &down_[1]}) {
    gpu_.check(gpu_.eventCreateWithFlags(event, cudaEventDisableTiming),
               "cudaEventCreateWithFlags");
  }
}

StagedCommunicator::~StagedCommunicator() {
  shutdown();
  for (cudaEvent_t event : {down_[0], down_[1]}) {
    if (event != nullptr) gpu_.eventDestroy(event);
  }
  if (stream_ != nullptr) gpu_.streamDestroy(stream_);
}

std::string StagedCommunicator::transport() const {
  const std::string under = host_->transport();
  return fmt::format("{}{}staged through pinned host memory from {}", under,
                     under.empty() ? "" : ", ", gpu_.deviceName(options_.device));
}

void StagedCommunicator::copy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
  gpu_.check(gpu_.memcpyAsync(to, from, bytes, kind, stream_), "cudaMemcpyAsync");
}

void StagedCommunicator::record(cudaEvent_t event) {
  gpu_.check(gpu_.eventRecord(event, stream_), "cudaEventRecord");
}

void StagedCommunicator::waitFor(cudaEvent_t event) {
  gpu_.check(gpu_.eventSynchronize(event), "cudaEventSynchronize");
}

// Chunk k lives in staging buffer k % 2. Chunk k+1's copy down is enqueued
// before the host works on chunk k, and after chunk k-1's copy up out of
// the same buffer: the stream runs its copies in order, so neither copy
// can overtake the other, and the host reduces while both run.
void StagedCommunicator::pipelined(const void* in, void* out, size_t count, DataType type,
                                   const OnChunk& work) {
  gpu_.check(gpu_.setDevice(options_.device), "cudaSetDevice");
  const size_t element = sizeOf(type);
  const size_t perChunk = std::max<size_t>(1, options_.chunkBytes / element);
  const size_t chunks = (count + perChunk - 1) / perChunk;
  const size_t stageBytes = std::min(count, perChunk) * element;
  char* stage[2] = {stage_[0].reserve(stageBytes), stage_[1].reserve(stageBytes)};
  auto bytesOf = [&](size_t k) {
    return (std::min(count, (k + 1) * perChunk) - k * perChunk) * element;
  };
  auto down = [&](size_t k) {
    if (in != nullptr)
      copy(stage[k % 2], at(in, k * perChunk * element), bytesOf(k), cudaMemcpyDeviceToHost);
    record(down_[k % 2]);
  };
  down(0);
  for (size_t k = 0; k < chunks; ++k) {
    waitFor(down_[k % 2]);
    if (k + 1 < chunks) {
      down(k + 1);
    }
    work(stage[k % 2], bytesOf(k) / element);
    copy(at(out, k * perChunk * element), stage[k % 2], bytesOf(k), cudaMemcpyHostToDevice);
  }
  gpu_.check(gpu_.streamSynchronize(stream_), "cudaStreamSynchronize");
}

void StagedCommunicator::whole(const void* in, size_t inBytes, void* out, size_t outBytes,
                               const std::function<void(const char*, char*)>& work) {
  gpu_.check(gpu_.setDevice(options_.device), "cudaSetDevice");
  char* hostIn = stage_[0].reserve(inBytes);
  char* hostOut = stage_[1].reserve(outBytes);
  if (in != nullptr && inBytes > 0) {
    copy(hostIn, in, inBytes, cudaMemcpyDeviceToHost);
    gpu_.check(gpu_.streamSynchronize(stream_), "cudaStreamSynchronize");
  }
  work(hostIn, hostOut);
  if (out != nullptr && outBytes > 0) {
    copy(out, hostOut, outBytes, cudaMemcpyHostToDevice);
    gpu_.check(gpu_.streamSynchronize(stream_), "cudaStreamSynchronize");
  }
}

void StagedCommunicator::doAllreduce(const void* in, void* out, size_t count, DataType type,
                                     ReduceOp op) {
  pipelined(in, out, count, type,
            [&](char* chunk, size_t n) { host_->allreduce(chunk, chunk, n, type, op); });
}

void StagedCommunicator::doBroadcast(const void* in, void* out, size_t count, DataType type,
                                     int root) {
  pipelined(rank() == root ? in : nullptr, out, count, type,
            [&](char* chunk, size_t n) { host_->broadcast(chunk, chunk, n, type, root); });
}

void StagedCommunicator::doAllgather(const void* in, void* out, size_t count, DataType type) {
  const size_t block = count * sizeOf(type);
  whole(in, block, out, block * static_cast<size_t>(size()),
        [&](const char* i, char* o) { host_->allgather(i, o, count, type); });
}

void StagedCommunicator::doReduceScatter(const void* in, void* out, size_t count, DataType type,
                                         ReduceOp op) {
  const size_t block = count * sizeOf(type);
  whole(in, block * static_cast<size_t>(size()), out, block,
        [&](const char* i, char* o) { host_->reduceScatter(i, o, count, type, op); });
}

void StagedCommunicator::doAlltoall(const void* in, void* out, size_t count, DataType type) {
  const size_t bytes = count * sizeOf(type) * static_cast<size_t>(size());
  whole(in, bytes, out, bytes, [&](const char* i, char* o) { host_->alltoall(i, o, count, type); });
}

void StagedCommunicator::doSend(const void* data, size_t count, DataType type, int peer, int tag) {
  whole(data, count * sizeOf(type), nullptr, 0,
        [&](const char* i, char*) { host_->send(i, count, type, peer, tag); });
}

void StagedCommunicator::doRecv(void* data, size_t count, DataType type, int peer, int tag) {
  whole(nullptr, 0, data, count * sizeOf(type),
        [&](const char*, char* o) { host_->recv(o, count, type, peer, tag); });
}

void StagedCommunicator::doSendRecv(const void* sendData, int sendPeer, void* recvData,
                                    int recvPeer, size_t count, DataType type, int tag) {
  const size_t bytes = count * sizeOf(type);
  whole(sendData, bytes, recvData, bytes, [&](const char* i, char* o) {
    host_->sendRecv(i, sendPeer, o, recvPeer, count, type, tag);
  });
}

}  // namespace distrun::comm::gpu
