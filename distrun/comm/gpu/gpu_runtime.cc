#include "distrun/comm/gpu/gpu_runtime.h"

#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "distrun/comm/gpu/loaded_library.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::comm::gpu {
namespace {

std::vector<std::string> runtimeCandidates(const Environment& env, GpuVendor vendor) {
  if (auto path = env.get("DISTRUN_GPU_RUNTIME"); path && !path->empty()) return {*path};
  if (vendor == GpuVendor::kAmd) return {"libamdhip64.so.6", "libamdhip64.so"};
  return {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
}

// CUDA's name of a call, or HIP's ("cudaSetDevice" -> "hipSetDevice").
std::string callName(GpuVendor vendor, const char* cudaName) {
  if (vendor == GpuVendor::kNvidia) return cudaName;
  const std::string name = cudaName;
  if (name == "cudaHostAlloc") return "hipHostMalloc";
  if (name == "cudaFreeHost") return "hipHostFree";
  return "hip" + name.substr(4);
}

GpuRuntime bindRuntime(const LoadedLibrary& library, GpuVendor vendor) {
  GpuRuntime r;
  r.library = library.name();
  r.vendor = vendor;
  auto bind = [&](auto*& pointer, const char* cudaName) {
    library.bind(pointer, callName(vendor, cudaName).c_str());
  };
  bind(r.getDeviceCount, "cudaGetDeviceCount");
  bind(r.setDevice, "cudaSetDevice");
  bind(r.streamCreateWithFlags, "cudaStreamCreateWithFlags");
  bind(r.streamDestroy, "cudaStreamDestroy");
  bind(r.eventCreateWithFlags, "cudaEventCreateWithFlags");
  bind(r.eventRecord, "cudaEventRecord");
  bind(r.eventQuery, "cudaEventQuery");
  bind(r.eventDestroy, "cudaEventDestroy");
  bind(r.malloc, "cudaMalloc");
  bind(r.free, "cudaFree");
  bind(r.memcpy, "cudaMemcpy");
  bind(r.memcpyAsync, "cudaMemcpyAsync");
  bind(r.getErrorString, "cudaGetErrorString");
  bind(r.streamSynchronize, "cudaStreamSynchronize");
  bind(r.eventSynchronize, "cudaEventSynchronize");
  bind(r.hostAlloc, "cudaHostAlloc");
  bind(r.freeHost, "cudaFreeHost");
  bind(r.deviceGetPciBusId, "cudaDeviceGetPCIBusId");
  return r;
}

}  // namespace

const char* backendName(GpuVendor vendor) { return vendor == GpuVendor::kAmd ? "rccl" : "nccl"; }

GpuVendor vendorOf(const std::string& backend) {
  return backend == "rccl" ? GpuVendor::kAmd : GpuVendor::kNvidia;
}

std::string GpuRuntime::deviceName(int device) const {
  return fmt::format("{}:{}", vendor == GpuVendor::kAmd ? "hip" : "cuda", device);
}

void GpuRuntime::check(cudaError_t result, const char* call) const {
  if (result == cudaSuccess) return;
  throw SystemError(ExitCode::kSystem,
                    fmt::format("{}: {} (error {})", callName(vendor, call), getErrorString(result),
                                static_cast<int>(result)));
}

int GpuRuntime::deviceCount() const {
  int count = 0;
  const cudaError_t result = getDeviceCount(&count);
  if (result != cudaSuccess || count == 0) {
    throw ConfigError(fmt::format(
        "this process sees no GPU ({}: {}); run on a GPU node (srun --gpus-per-node=N), check "
        "{}, or stay on the CPU (the gloo backend, --device cpu)",
        callName(vendor, "cudaGetDeviceCount"),
        result == cudaSuccess ? "0 devices" : getErrorString(result),
        vendor == GpuVendor::kAmd ? "ROCR_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES"));
  }
  return count;
}

int GpuRuntime::deviceOf(const Environment& env) const {
  const int visible = deviceCount();
  if (visible == 1) return 0;
  const std::optional<std::string> local = env.get("LOCAL_RANK");
  const int localRank = local ? static_cast<int>(parseCount(*local, "LOCAL_RANK")) : 0;
  if (localRank >= visible) {
    throw ConfigError(fmt::format(
        "LOCAL_RANK={} but this process sees {} GPUs: give each rank a GPU (as many ranks a node "
        "as GPUs, srun --gpus-per-node=N), or share them through the gloo backend",
        localRank, visible));
  }
  return localRank;
}

const GpuRuntime& loadGpuRuntime(const Environment& env, GpuVendor vendor) {
  return loadOnce<GpuRuntime>(
      runtimeCandidates(env, vendor),
      vendor == GpuVendor::kAmd ? "the HIP runtime" : "the CUDA runtime",
      "install the GPU driver's runtime (module load cuda or rocm), or set DISTRUN_GPU_RUNTIME to "
      "its path",
      [vendor](const LoadedLibrary& library) { return bindRuntime(library, vendor); });
}

}  // namespace distrun::comm::gpu
