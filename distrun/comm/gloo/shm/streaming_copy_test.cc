#include "distrun/comm/gloo/shm/streaming_copy.h"

#include <cstddef>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "distrun/comm/communicator.h"
#include "distrun/comm/testing/contract.h"

using distrun::comm::testing::runGlooThreads;

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

// Streamed allgathers of several slots' worth a rank (4 MiB slots: 2
// pieces of each block), in place and not: every rank gets every block.
TEST(SharedMemoryTest, AStreamedAllgatherGivesEveryRankEveryBlock) {
  constexpr size_t kCount = 1'500'007;
  for (bool inPlace : {true, false}) {
    GlooOptions o;
    o.sharedStreamingFromBytes = 0;
    auto errors = runGlooThreads(
        3,
        [&](Communicator& comm) {
          std::vector<float> out(3 * kCount, -1.0f);
          std::vector<float> own(kCount);
          float* in = inPlace ? out.data() + static_cast<size_t>(comm.rank()) * kCount : own.data();
          for (size_t i = 0; i < kCount; ++i) {
            in[i] = static_cast<float>(comm.rank() * 1000 + static_cast<int>(i % 997));
          }
          comm.allgather(in, out.data(), kCount, DataType::kFloat32);
          for (int r = 0; r < 3; ++r) {
            for (size_t i = 0; i < kCount; i += 1 + i % 13) {
              ASSERT_EQ(out[static_cast<size_t>(r) * kCount + i],
                        static_cast<float>(r * 1000 + static_cast<int>(i % 997)))
                  << "block " << r << ", element " << i << (inPlace ? ", in place" : "");
            }
          }
          EXPECT_EQ(out.back(), static_cast<float>(2000 + static_cast<int>((kCount - 1) % 997)));
        },
        o);
    EXPECT_EQ(errors, std::vector<std::string>(3, ""));
  }
}

}  // namespace
}  // namespace distrun::comm
