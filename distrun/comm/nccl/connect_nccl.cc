#include "distrun/comm/nccl/connect_nccl.h"

#include <optional>

#include <fmt/format.h>

#include "distrun/comm/job_store.h"
#include "distrun/comm/nccl/nccl_communicator.h"
#include "distrun/comm/nccl/unique_id.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::comm {
namespace {

using gpu::GpuVendor;

// The GPU a rank drives: the only one it sees (srun --gpus-per-task=1,
// distrun exec --gpu-bind), else its LOCAL_RANK's, as torchrun's
// cuda:LOCAL_RANK.
int chooseDevice(const Environment& env, int visible, const char* backend) {
  if (visible == 1) return 0;
  const std::optional<std::string> local = env.get("LOCAL_RANK");
  const int localRank = local ? static_cast<int>(parseCount(*local, "LOCAL_RANK")) : 0;
  if (localRank >= visible) {
    throw ConfigError(fmt::format(
        "LOCAL_RANK={} but this process sees {} GPUs: the {} backend runs one rank a GPU (give "
        "each node as many GPUs as ranks, srun --gpus-per-node=N, or use the gloo backend)",
        localRank, visible, backend));
  }
  return localRank;
}

}  // namespace

std::unique_ptr<Communicator> connectNccl(const Environment& env, const std::string& backend,
                                          const std::string& name,
                                          std::chrono::milliseconds timeout) {
  const gpu::GpuVendor vendor = backend == "rccl" ? gpu::GpuVendor::kAmd : gpu::GpuVendor::kNvidia;
  const gpu::GpuRuntime& gpu = gpu::loadGpuRuntime(env, vendor);
  const nccl::NcclLibrary& library = nccl::loadNccl(env, vendor);
  nccl::NcclOptions options;
  options.device = chooseDevice(env, gpu.deviceCount(), backend.c_str());
  options.timeout = timeout;
  gpu.check(gpu.setDevice(options.device), "cudaSetDevice");
  JobStore job = joinJobStore(env, name, timeout);
  const ncclUniqueId id = nccl::shareUniqueId(
      *job.client, job.prefix + "/nccl_id", job.rank,
      [&] {
        ncclUniqueId made;
        const ncclResult_t result = library.getUniqueId(&made);
        if (result != ncclSuccess) {
          throw SystemError(ExitCode::kSystem,
                            "ncclGetUniqueId: " + library.describe(result, nullptr));
        }
        return made;
      },
      timeout);
  // Every rank has read the id once init is done: the store may go after.
  return std::make_unique<nccl::NcclCommunicator>(job.rank, job.size, id, options, library, gpu);
}

}  // namespace distrun::comm
