#pragma once

// What the shared-memory collectives and messages share about waiting on
// one another: cache lines, wrapping sequence numbers, futexes, and how
// long to spin before sleeping.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <ctime>

namespace distrun::comm::shm {

inline constexpr size_t kLine = 64;  // a cache line
// How long a waiting rank polls before it sleeps: a peer in lockstep
// usually arrives within this, and a wake-up costs more.
inline constexpr auto kSpin = std::chrono::microseconds(30);
// How often a sleeping rank checks that its peer is alive.
inline constexpr auto kCheckEvery = std::chrono::milliseconds(50);

inline size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Sequence numbers wrap; `posted` has reached `wanted` when it is at most
// 2^31 ahead of it.
inline bool reached(uint32_t posted, uint32_t wanted) {
  return static_cast<int32_t>(posted - wanted) >= 0;
}

// Sleeps while `word` holds `expected`, at most `timeout`.
inline void futexWait(std::atomic<uint32_t>& word, uint32_t expected,
                      std::chrono::nanoseconds timeout) {
  static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free,
                "futexes need plain 32-bit atomics");
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  timespec ts{.tv_sec = s.count(), .tv_nsec = (timeout - s).count()};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

inline void futexWakeAll(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
            0);
}

}  // namespace distrun::comm::shm
