#include "distrun/comm/nccl/connect_nccl.h"

#include "distrun/comm/job_store.h"
#include "distrun/comm/nccl/nccl_communicator.h"
#include "distrun/comm/nccl/unique_id.h"
#include "distrun/common/error.h"

namespace distrun::comm {

std::unique_ptr<Communicator> connectNccl(const Environment& env, const std::string& backend,
                                          const std::string& name,
                                          std::chrono::milliseconds timeout) {
  const gpu::GpuVendor vendor = gpu::vendorOf(backend);
  const gpu::GpuRuntime& gpu = gpu::loadGpuRuntime(env, vendor);
  const nccl::NcclLibrary& library = nccl::loadNccl(env, vendor);
  nccl::NcclOptions options;
  options.device = gpu.deviceOf(env);
  options.timeout = timeout;
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
