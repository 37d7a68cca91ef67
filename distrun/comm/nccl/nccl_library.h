#pragma once

// NCCL, or RCCL (AMD's NCCL: the same calls and types, in librccl), loaded at
// run time. distrun links neither, so that one build (the .deb) installs and
// runs on NVIDIA, AMD and CPU-only nodes alike; the library is opened only
// when a job asks for the nccl or rccl backend (docs/comm.md, "NCCL and
// RCCL").

#include <nccl.h>

#include <string>

#include "distrun/comm/dtype.h"
#include "distrun/comm/gpu/gpu_runtime.h"
#include "distrun/common/environment.h"

namespace distrun::comm::nccl {

struct NcclLibrary {
  std::string library;  // the file loaded
  gpu::GpuVendor vendor = gpu::GpuVendor::kNvidia;
  int version = 0;  // NCCL_VERSION_CODE's form: 22809 for 2.28.9
  decltype(&ncclGetVersion) getVersion = nullptr;
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRankConfig) commInitRankConfig = nullptr;
  decltype(&ncclCommFinalize) commFinalize = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclCommAbort) commAbort = nullptr;
  decltype(&ncclCommGetAsyncError) commGetAsyncError = nullptr;
  decltype(&ncclGetErrorString) getErrorString = nullptr;
  decltype(&ncclGetLastError) getLastError = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclAllGather) allGather = nullptr;
  decltype(&ncclReduceScatter) reduceScatter = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) groupStart = nullptr;
  decltype(&ncclGroupEnd) groupEnd = nullptr;

  // "2.28.9".
  std::string versionText() const;
  // What went wrong, in the library's words: "ncclRemoteError: remote
  // process exited or there was a network error (<its last error>)".
  std::string describe(ncclResult_t result, ncclComm_t comm) const;
};

// The library of `vendor`, loaded once a process: DISTRUN_NCCL_LIBRARY when
// set (a path), else libnccl.so.2 (NVIDIA) or librccl.so.1, librccl.so
// (AMD). Throws ConfigError "NCCL (for the nccl backend) could not be loaded
// (tried libnccl.so.2: <why>); ...": the library named, and how to give it.
const NcclLibrary& loadNccl(const Environment& env, gpu::GpuVendor vendor);

// distrun's element types and reductions as NCCL's. Every DataType has one;
// kAvg is NCCL's own ncclAvg (2.10 and later), not a sum divided after.
ncclDataType_t toNccl(DataType type);
ncclRedOp_t toNccl(ReduceOp op);

}  // namespace distrun::comm::nccl
