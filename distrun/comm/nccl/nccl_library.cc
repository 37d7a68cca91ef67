#include "distrun/comm/nccl/nccl_library.h"

#include <vector>

#include <fmt/format.h>

#include "distrun/comm/gpu/loaded_library.h"
#include "distrun/common/error.h"

namespace distrun::comm::nccl {
namespace {

std::vector<std::string> ncclCandidates(const Environment& env, gpu::GpuVendor vendor) {
  if (auto path = env.get("DISTRUN_NCCL_LIBRARY"); path && !path->empty()) return {*path};
  if (vendor == gpu::GpuVendor::kAmd) return {"librccl.so.1", "librccl.so"};
  return {"libnccl.so.2"};
}

const char* ncclResultName(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "ncclResult";
  }
}

NcclLibrary bindNccl(const gpu::LoadedLibrary& library, gpu::GpuVendor vendor) {
  NcclLibrary n;
  n.library = library.name();
  n.vendor = vendor;
  library.bind(n.getVersion, "ncclGetVersion");
  library.bind(n.getUniqueId, "ncclGetUniqueId");
  library.bind(n.commInitRankConfig, "ncclCommInitRankConfig");
  library.bind(n.commFinalize, "ncclCommFinalize");
  library.bind(n.commDestroy, "ncclCommDestroy");
  library.bind(n.commAbort, "ncclCommAbort");
  library.bind(n.commGetAsyncError, "ncclCommGetAsyncError");
  library.bind(n.getErrorString, "ncclGetErrorString");
  library.bind(n.getLastError, "ncclGetLastError");
  library.bind(n.allReduce, "ncclAllReduce");
  library.bind(n.broadcast, "ncclBroadcast");
  library.bind(n.allGather, "ncclAllGather");
  library.bind(n.reduceScatter, "ncclReduceScatter");
  library.bind(n.send, "ncclSend");
  library.bind(n.recv, "ncclRecv");
  library.bind(n.groupStart, "ncclGroupStart");
  library.bind(n.groupEnd, "ncclGroupEnd");
  if (n.getVersion(&n.version) != ncclSuccess) {
    throw ConfigError(fmt::format("{}: ncclGetVersion failed", n.library));
  }
  return n;
}

}  // namespace

std::string NcclLibrary::versionText() const {
  // 2.9 and later: major * 10000 + minor * 100 + patch.
  return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

std::string NcclLibrary::describe(ncclResult_t result, ncclComm_t comm) const {
  const char* last = getLastError(comm);
  std::string text = fmt::format("{}: {}", ncclResultName(result), getErrorString(result));
  if (last != nullptr && *last != '\0') text += fmt::format(" ({})", last);
  return text;
}

const NcclLibrary& loadNccl(const Environment& env, gpu::GpuVendor vendor) {
  const bool amd = vendor == gpu::GpuVendor::kAmd;
  return gpu::loadOnce<NcclLibrary>(
      ncclCandidates(env, vendor),
      fmt::format("{} (for the {} backend)", amd ? "RCCL" : "NCCL", gpu::backendName(vendor)),
      fmt::format("install {} (module load {}), add its folder to LD_LIBRARY_PATH, or set "
                  "DISTRUN_NCCL_LIBRARY to its path",
                  amd ? "RCCL" : "NCCL", amd ? "rocm" : "cuda"),
      [vendor](const gpu::LoadedLibrary& library) { return bindNccl(library, vendor); });
}

ncclDataType_t toNccl(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
  }
  throw EnforceError("toNccl: a DataType without an NCCL type");
}

ncclRedOp_t toNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kProd:
      return ncclProd;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kAvg:
      return ncclAvg;
  }
  throw EnforceError("toNccl: a ReduceOp without an NCCL op");
}

}  // namespace distrun::comm::nccl
