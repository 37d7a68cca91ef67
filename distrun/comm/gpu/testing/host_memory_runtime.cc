#include "distrun/comm/gpu/testing/host_memory_runtime.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace distrun::comm::gpu::testing {
namespace {

char handle;  // what every stream and event points at

cudaError_t deviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t setDevice(int) { return cudaSuccess; }
cudaError_t streamCreate(cudaStream_t* stream, unsigned) {
  *stream = reinterpret_cast<cudaStream_t>(&handle);
  return cudaSuccess;
}
cudaError_t streamDone(cudaStream_t) { return cudaSuccess; }
cudaError_t eventCreate(cudaEvent_t* event, unsigned) {
  *event = reinterpret_cast<cudaEvent_t>(&handle);
  return cudaSuccess;
}
cudaError_t eventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t eventDone(cudaEvent_t) { return cudaSuccess; }
cudaError_t allocate(void** pointer, size_t bytes) {
  *pointer = std::malloc(bytes);
  return *pointer != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t allocateHost(void** pointer, size_t bytes, unsigned) {
  return allocate(pointer, bytes);
}
cudaError_t release(void* pointer) {
  std::free(pointer);
  return cudaSuccess;
}
cudaError_t copy(void* to, const void* from, size_t bytes, cudaMemcpyKind) {
  std::memcpy(to, from, bytes);
  return cudaSuccess;
}
cudaError_t copyAsync(void* to, const void* from, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return copy(to, from, bytes, kind);
}
const char* errorString(cudaError_t) { return "host-memory runtime error"; }
cudaError_t pciBusId(char* id, int length, int) {
  std::snprintf(id, static_cast<size_t>(length), "host");
  return cudaSuccess;
}

GpuRuntime make() {
  GpuRuntime r;
  r.library = "host memory (tests)";
  r.getDeviceCount = deviceCount;
  r.setDevice = setDevice;
  r.streamCreateWithFlags = streamCreate;
  r.streamDestroy = streamDone;
  r.eventCreateWithFlags = eventCreate;
  r.eventRecord = eventRecord;
  r.eventQuery = eventDone;
  r.eventDestroy = eventDone;
  r.malloc = allocate;
  r.free = release;
  r.memcpy = copy;
  r.memcpyAsync = copyAsync;
  r.getErrorString = errorString;
  r.streamSynchronize = streamDone;
  r.eventSynchronize = eventDone;
  r.hostAlloc = allocateHost;
  r.freeHost = release;
  r.deviceGetPciBusId = pciBusId;
  return r;
}

}  // namespace

const GpuRuntime& hostMemoryRuntime() {
  static const GpuRuntime runtime = make();
  return runtime;
}

}  // namespace distrun::comm::gpu::testing
