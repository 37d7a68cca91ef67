#pragma once

// NCCL's unique id, passed from rank 0 to the others through distrun's store
// (the one every rank already meets at), as torch's ProcessGroupNCCL passes
// it through its TCPStore.

#include <nccl.h>

#include <chrono>
#include <functional>
#include <string>

#include "distrun/rdzv/store.h"

namespace distrun::comm::nccl {

// Rank 0 makes the id (`makeId`, ncclGetUniqueId) and sets it at `key`;
// every other rank waits for it there. Throws TimeoutError naming rank 0
// and the store when the id does not come within `timeout`, DataError when
// what is at `key` is not an id (another program's key).
ncclUniqueId shareUniqueId(rdzv::Store& store, const std::string& key, int rank,
                           const std::function<ncclUniqueId()>& makeId,
                           std::chrono::milliseconds timeout);

}  // namespace distrun::comm::nccl
