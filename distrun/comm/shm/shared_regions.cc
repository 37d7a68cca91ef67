#include "distrun/comm/shm/shared_regions.h"

#include <cstdint>
#include <stdexcept>
#include <utility>

namespace distrun::comm {

namespace {

constexpr size_t kPage = 4096;

size_t strideOf(size_t regionBytes) { return (regionBytes + kPage - 1) / kPage * kPage; }

}  // namespace

size_t SharedRegions::segmentBytes(int size, size_t regionBytes) {
  return static_cast<size_t>(size) * strideOf(regionBytes);
}

SharedRegions::SharedRegions(SharedSegment segment, int size, size_t regionBytes, uint32_t id)
    : segment_(std::move(segment)),
      regionBytes_(regionBytes),
      regionStride_(strideOf(regionBytes)),
      id_(id) {
  if (segment_.size() < segmentBytes(size, regionBytes)) {
    throw std::runtime_error("the segment is too small for its regions");
  }
}

char* SharedRegions::region(int rank) const {
  return segment_.data() + static_cast<size_t>(rank) * regionStride_;
}

std::optional<size_t> SharedRegions::offsetIn(int rank, const void* data, size_t bytes) const {
  const auto begin = reinterpret_cast<uintptr_t>(region(rank));
  const auto at = reinterpret_cast<uintptr_t>(data);
  if (at < begin || at - begin > regionBytes_ || bytes > regionBytes_ - (at - begin)) {
    return std::nullopt;
  }
  return at - begin;
}

}  // namespace distrun::comm
