#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "distrun/comm/shm/shared_segment.h"

namespace distrun::comm {

// Memory that allreduces sum where it lies (Communicator::allocateReducible
// with shared memory): one region per rank, side by side in one segment
// that every rank of the host maps, so a rank can read and write its
// peers' data at the same offset in their regions. Regions start on page
// boundaries. `id` tells one set from another; every rank numbers its
// sets in the same (collective) order.
class SharedRegions {
 public:
  // The segment size `size` regions of `regionBytes` need.
  static size_t segmentBytes(int size, size_t regionBytes);

  SharedRegions(SharedSegment segment, int size, size_t regionBytes, uint32_t id);

  char* region(int rank) const;
  uint32_t id() const { return id_; }
  // Where [data, data + bytes) lies in `rank`'s region: its byte offset,
  // or nothing when it does not lie wholly inside.
  std::optional<size_t> offsetIn(int rank, const void* data, size_t bytes) const;

 private:
  SharedSegment segment_;
  size_t regionBytes_;   // as asked
  size_t regionStride_;  // rounded up to whole pages
  uint32_t id_;
};

}  // namespace distrun::comm
