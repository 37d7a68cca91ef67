#pragma once

// connect()'s nccl and rccl backends (connect.h, docs/comm.md "NCCL and
// RCCL"). No NCCL or CUDA header here: connect.cc includes it in every build.

#include <chrono>
#include <memory>
#include <string>

#include "distrun/comm/communicator.h"
#include "distrun/common/environment.h"

namespace distrun::comm {

// The message of a build without NCCL.
inline constexpr const char* kBuiltWithoutNccl =
    "this distrun was built without NCCL (configure it where the CUDA toolkit and NCCL are "
    "installed; docs/install.md)";

// Loads NCCL (`backend` "nccl") or RCCL ("rccl") and the GPU runtime,
// chooses this rank's GPU (the only one it sees, else LOCAL_RANK's, as
// torchrun's cuda:LOCAL_RANK), then joins the job's store (job_store.h,
// the communicator `name`d), passes NCCL's unique id through it and joins
// NCCL's communicator. A missing library or GPU fails before the store. Throws ConfigError for a
// library that cannot be loaded (naming it), no GPU, or a LOCAL_RANK without a GPU; TimeoutError
// when the ranks do not all arrive within `timeout`; UsageError in a build without NCCL.
std::unique_ptr<Communicator> connectNccl(const Environment& env, const std::string& backend,
                                          const std::string& name,
                                          std::chrono::milliseconds timeout);

}  // namespace distrun::comm
