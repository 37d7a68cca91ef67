#pragma once

// The GPU runtime the NCCL backend drives its streams with, loaded at run
// time: CUDA's (libcudart) on NVIDIA GPUs, HIP's (libamdhip64) on AMD ones.
// HIP's calls take the same arguments as CUDA's and return the same codes
// for what is used here (0 success, 600 not ready), so one table of CUDA's
// types serves both.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "distrun/common/environment.h"

namespace distrun::comm::gpu {

// NVIDIA: CUDA and NCCL. AMD: HIP and RCCL.
enum class GpuVendor { kNvidia, kAmd };

// "nccl" or "rccl": the backend's name for `vendor`.
const char* backendName(GpuVendor vendor);
// The vendor of the backend `backend` ("rccl": AMD; "nccl" and the staged
// gloo: NVIDIA).
GpuVendor vendorOf(const std::string& backend);

struct GpuRuntime {
  std::string library;  // the file loaded
  GpuVendor vendor = GpuVendor::kNvidia;
  decltype(&cudaGetDeviceCount) getDeviceCount = nullptr;
  decltype(&cudaSetDevice) setDevice = nullptr;
  decltype(&cudaStreamCreateWithFlags) streamCreateWithFlags = nullptr;
  decltype(&cudaStreamDestroy) streamDestroy = nullptr;
  decltype(&cudaEventCreateWithFlags) eventCreateWithFlags = nullptr;
  decltype(&cudaEventRecord) eventRecord = nullptr;
  decltype(&cudaEventQuery) eventQuery = nullptr;
  decltype(&cudaEventDestroy) eventDestroy = nullptr;
  cudaError_t (*malloc)(void** pointer, size_t bytes) = nullptr;  // cudaMalloc (C++ overloads it)
  decltype(&cudaFree) free = nullptr;
  decltype(&cudaMemcpy) memcpy = nullptr;
  decltype(&cudaMemcpyAsync) memcpyAsync = nullptr;
  decltype(&cudaGetErrorString) getErrorString = nullptr;
  decltype(&cudaStreamSynchronize) streamSynchronize = nullptr;
  decltype(&cudaEventSynchronize) eventSynchronize = nullptr;
  // Pinned host memory, cudaHostAlloc (C++ overloads it; HIP: hipHostMalloc).
  cudaError_t (*hostAlloc)(void** pointer, size_t bytes, unsigned int flags) = nullptr;
  decltype(&cudaFreeHost) freeHost = nullptr;  // (HIP: hipHostFree)
  decltype(&cudaDeviceGetPCIBusId) deviceGetPciBusId = nullptr;

  // Throws SystemError "`call`: <the runtime's words> (error N)" unless
  // `result` is success.
  void check(cudaError_t result, const char* call) const;
  // The GPUs this process sees (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES
  // applied). Throws ConfigError "this process sees no GPU (<why>); ..."
  // when there is none.
  int deviceCount() const;
  // The GPU this rank drives: the only one it sees (srun
  // --gpus-per-task=1, distrun exec --gpu-bind), else LOCAL_RANK's, as
  // torchrun's cuda:LOCAL_RANK. Throws ConfigError where there is no GPU
  // or LOCAL_RANK has none.
  int deviceOf(const Environment& env) const;
  // "cuda:0", or "hip:0" on AMD GPUs: GPU `device` in messages and tables.
  std::string deviceName(int device) const;
};

// The runtime for `vendor`, loaded once a process: DISTRUN_GPU_RUNTIME when
// set (a path), else libcudart.so.13, .so.12, .so (NVIDIA) or
// libamdhip64.so.6, .so (AMD). Throws ConfigError naming what was tried.
const GpuRuntime& loadGpuRuntime(const Environment& env, GpuVendor vendor);

}  // namespace distrun::comm::gpu
