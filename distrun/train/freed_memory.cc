#include "distrun/train/freed_memory.h"

#include <malloc.h>

#include <climits>
#include <string>

namespace distrun::train {

namespace {

constexpr int kLargestHeapBlock = 32 << 20;  // glibc refuses more on 64-bit

bool userTunesMalloc(const Environment& env) {
  const std::string tunables = env.get("GLIBC_TUNABLES").value_or("");
  return tunables.find("glibc.malloc.mmap_threshold") != std::string::npos ||
         tunables.find("glibc.malloc.trim_threshold") != std::string::npos;
}

}  // namespace

bool keepFreedMemoryForReuse(const Environment& env) {
  if (userTunesMalloc(env)) return false;
  return ::mallopt(M_MMAP_THRESHOLD, kLargestHeapBlock) == 1 &&
         ::mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
}

}  // namespace distrun::train
