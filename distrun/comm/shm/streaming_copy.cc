#include "distrun/comm/shm/streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace distrun::comm {

#if defined(__SSE2__)

// 16-byte streaming stores (SSE2, on every x86-64), four a cache line: the
// CPU's write-combining buffers send whole lines to memory either way, so
// wider stores would not move more.
void copyPastTheCache(void* to, const void* from, size_t bytes) {
  auto* out = static_cast<char*>(to);
  const auto* in = static_cast<const char*>(from);
  const size_t misaligned = reinterpret_cast<uintptr_t>(out) & 15u;
  const size_t head = misaligned == 0 ? 0 : 16 - misaligned;
  if (bytes <= head) {
    std::memcpy(out, in, bytes);
    return;
  }
  std::memcpy(out, in, head);
  out += head;
  in += head;
  bytes -= head;
  const size_t lines = bytes & ~size_t{63};
  for (size_t at = 0; at < lines; at += 64) {
    const auto* source = reinterpret_cast<const __m128i*>(in + at);
    auto* target = reinterpret_cast<__m128i*>(out + at);
    const __m128i a = _mm_loadu_si128(source);
    const __m128i b = _mm_loadu_si128(source + 1);
    const __m128i c = _mm_loadu_si128(source + 2);
    const __m128i d = _mm_loadu_si128(source + 3);
    _mm_stream_si128(target, a);
    _mm_stream_si128(target + 1, b);
    _mm_stream_si128(target + 2, c);
    _mm_stream_si128(target + 3, d);
  }
  std::memcpy(out + lines, in + lines, bytes - lines);
}

void finishCopiesPastTheCache() { _mm_sfence(); }

#else

void copyPastTheCache(void* to, const void* from, size_t bytes) { std::memcpy(to, from, bytes); }

void finishCopiesPastTheCache() {}

#endif

}  // namespace distrun::comm
