#include "distrun/comm/shm/streaming_copy.h"

#include <cstddef>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace distrun::comm {
namespace {

// Every length around a cache line and a 16-byte store, from and to every
// alignment within a line: exactly the source's bytes land, and none
// beside them.
TEST(StreamingCopyTest, CopiesExactlyTheBytesAtEveryAlignmentAndLength) {
  std::vector<unsigned char> from(512);
  for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<unsigned char>(i * 7 + 1);
  for (size_t source = 0; source < 64; source += 3) {
    for (size_t target = 0; target < 64; ++target) {
      for (size_t bytes : {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 200, 383}) {
        std::vector<unsigned char> to(512, 0xee);
        copyPastTheCache(to.data() + target, from.data() + source, bytes);
        finishCopiesPastTheCache();
        for (size_t i = 0; i < to.size(); ++i) {
          const bool inside = i >= target && i < target + bytes;
          ASSERT_EQ(to[i], inside ? from[source + i - target] : 0xee)
              << "byte " << i << ", from +" << source << " to +" << target << ", " << bytes
              << " bytes";
        }
      }
    }
  }
}

}  // namespace
}  // namespace distrun::comm
