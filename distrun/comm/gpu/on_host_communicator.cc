#include "distrun/comm/gpu/on_host_communicator.h"

#include <algorithm>
#include <utility>

namespace distrun::comm::gpu {

OnHostCommunicator::OnHostCommunicator(std::unique_ptr<Communicator> device, const GpuRuntime& gpu,
                                       int gpuIndex)
    : OnHostCommunicator(*device, gpu, gpuIndex) {
  owned_ = std::move(device);
}

OnHostCommunicator::OnHostCommunicator(Communicator& device, const GpuRuntime& gpu, int gpuIndex)
    : Communicator(device.rank(), device.size()),
      device_(&device),
      gpu_(gpu),
      gpuIndex_(gpuIndex) {}

char* OnHostCommunicator::toDevice(const char* host, size_t bytes) {
  void* device = nullptr;
  gpu_.check(gpu_.malloc(&device, std::max<size_t>(bytes, 1)), "cudaMalloc");
  const cudaError_t copied = gpu_.memcpy(device, host, bytes, cudaMemcpyHostToDevice);
  if (copied != cudaSuccess) gpu_.free(device);
  gpu_.check(copied, "cudaMemcpy");
  return static_cast<char*>(device);
}

void OnHostCommunicator::toHostAndFree(char* device, char* host, size_t bytes) {
  const cudaError_t copied = gpu_.memcpy(host, device, bytes, cudaMemcpyDeviceToHost);
  gpu_.free(device);
  gpu_.check(copied, "cudaMemcpy");
}

void OnHostCommunicator::mirrored(const void* in, size_t inBytes, void* out, size_t outBytes,
                                  const OnDevice& run) {
  gpu_.check(gpu_.setDevice(gpuIndex_), "cudaSetDevice");
  const auto* i = static_cast<const char*>(in);
  auto* o = static_cast<char*>(out);
  if (i != nullptr && o != nullptr && i < o + outBytes && o < i + inBytes) {
    const char* lo = std::min<const char*>(i, o);
    const char* hi = std::max<const char*>(i + inBytes, o + outBytes);
    const auto span = static_cast<size_t>(hi - lo);
    char* both = toDevice(lo, span);
    run(both + (i - lo), both + (o - lo));
    toHostAndFree(both, const_cast<char*>(lo), span);
    return;
  }
  char* dIn = i != nullptr ? toDevice(i, inBytes) : nullptr;
  char* dOut = o != nullptr ? toDevice(o, outBytes) : nullptr;
  run(dIn, dOut);
  if (dOut != nullptr) toHostAndFree(dOut, o, outBytes);
  if (dIn != nullptr) gpu_.free(dIn);
}

void OnHostCommunicator::doAllreduce(const void* in, void* out, size_t count, DataType type,
                                     ReduceOp op) {
  const size_t bytes = count * sizeOf(type);
  mirrored(in, bytes, out, bytes,
           [&](const void* i, void* o) { device_->allreduce(i, o, count, type, op); });
}

void OnHostCommunicator::doBroadcast(const void* in, void* out, size_t count, DataType type,
                                     int root) {
  const size_t bytes = count * sizeOf(type);
  mirrored(rank() == root ? in : nullptr, bytes, out, bytes,
           [&](const void* i, void* o) { device_->broadcast(i, o, count, type, root); });
}

void OnHostCommunicator::doAllgather(const void* in, void* out, size_t count, DataType type) {
  const size_t bytes = count * sizeOf(type);
  mirrored(in, bytes, out, bytes * static_cast<size_t>(size()),
           [&](const void* i, void* o) { device_->allgather(i, o, count, type); });
}

void OnHostCommunicator::doReduceScatter(const void* in, void* out, size_t count, DataType type,
                                         ReduceOp op) {
  const size_t bytes = count * sizeOf(type);
  mirrored(in, bytes * static_cast<size_t>(size()), out, bytes,
           [&](const void* i, void* o) { device_->reduceScatter(i, o, count, type, op); });
}

void OnHostCommunicator::doAlltoall(const void* in, void* out, size_t count, DataType type) {
  const size_t bytes = count * sizeOf(type) * static_cast<size_t>(size());
  mirrored(in, bytes, out, bytes,
           [&](const void* i, void* o) { device_->alltoall(i, o, count, type); });
}

void OnHostCommunicator::doSend(const void* data, size_t count, DataType type, int peer, int tag) {
  mirrored(data, count * sizeOf(type), nullptr, 0,
           [&](const void* i, void*) { device_->send(i, count, type, peer, tag); });
}

void OnHostCommunicator::doRecv(void* data, size_t count, DataType type, int peer, int tag) {
  mirrored(nullptr, 0, data, count * sizeOf(type),
           [&](const void*, void* o) { device_->recv(o, count, type, peer, tag); });
}

void OnHostCommunicator::doSendRecv(const void* sendData, int sendPeer, void* recvData,
                                    int recvPeer, size_t count, DataType type, int tag) {
  const size_t bytes = count * sizeOf(type);
  mirrored(sendData, bytes, recvData, bytes, [&](const void* i, void* o) {
    device_->sendRecv(i, sendPeer, o, recvPeer, count, type, tag);
  });
}

}  // namespace distrun::comm::gpu
