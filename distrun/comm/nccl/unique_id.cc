#include "distrun/comm/nccl/unique_id.h"

#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::comm::nccl {

ncclUniqueId shareUniqueId(rdzv::Store& store, const std::string& key, int rank,
                           const std::function<ncclUniqueId()>& makeId,
                           std::chrono::milliseconds timeout) {
  if (rank == 0) {
    const ncclUniqueId id = makeId();
    store.set(key, std::string(id.internal, sizeof id.internal));
    return id;
  }
  const std::optional<std::string> value = store.get(key, timeout);
  if (!value) {
    throw TimeoutError(fmt::format(
        "rank 0 did not publish NCCL's unique id at {} in the store {} within {:g} s (did rank 0 "
        "start, and with the same backend?)",
        key, store.address(), std::chrono::duration<double>(timeout).count()));
  }
  ncclUniqueId id;
  if (value->size() != sizeof id.internal) {
    throw DataError(fmt::format("the store {} holds {} bytes at {}, not an NCCL unique id of {}",
                                store.address(), value->size(), key, sizeof id.internal));
  }
  std::memcpy(id.internal, value->data(), sizeof id.internal);
  return id;
}

}  // namespace distrun::comm::nccl
