#pragma once

#include <cstddef>

namespace distrun::comm {

// memcpy with non-temporal (streaming) stores: the destination's cache
// lines go to memory without being read first and without filling the
// cache. For outputs larger than the cache, which a plain copy would first
// read from memory (to own each line) and then write back: a third less
// memory traffic. Plain memcpy where the CPU has no streaming stores.
void copyPastTheCache(void* to, const void* from, size_t bytes);

// Orders every streaming store this thread made before whatever it does
// next (an atomic post included, which alone would not order them).
void finishCopiesPastTheCache();

}  // namespace distrun::comm
