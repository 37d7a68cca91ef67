#include "distrun/train/freed_memory.h"

#include <malloc.h>

#include <cstdlib>

#include <gtest/gtest.h>

namespace distrun::train {
namespace {

TEST(FreedMemoryTest, UserMallocTunablesWin) {
  MapEnvironment env({{"GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1000"}});
  EXPECT_FALSE(keepFreedMemoryForReuse(env));
}

// A 16 MB block comes from the heap, not from its own mmap, and stays in
// the process once freed, ready for the next step's tensor.
TEST(FreedMemoryTest, ALargeFreedBlockStaysInTheProcess) {
  ASSERT_TRUE(keepFreedMemoryForReuse(MapEnvironment({})));
  constexpr size_t kBlock = 16 << 20;
  const size_t mappedBefore = ::mallinfo2().hblkhd;
  void* block = std::malloc(kBlock);
  ASSERT_NE(block, nullptr);
  static_cast<volatile char*>(block)[kBlock - 1] = 1;
  EXPECT_EQ(::mallinfo2().hblkhd, mappedBefore) << "the block was mmapped on its own";
  std::free(block);
  EXPECT_GE(::mallinfo2().fordblks, kBlock) << "the freed block went back to the kernel";
}

}  // namespace
}  // namespace distrun::train
