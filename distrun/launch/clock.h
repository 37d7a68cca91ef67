#pragma once

#include <chrono>

namespace distrun::launch {

using TimePoint = std::chrono::steady_clock::time_point;

// Where the agent reads the time: the seam that keeps the Supervisor's
// deadlines testable without waiting. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

// The monotonic clock of this machine.
class SteadyClock : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
};

// A clock that stands still until a test advances it. Starts at the
// steady clock's epoch. Not thread-safe.
class FakeClock : public Clock {
 public:
  TimePoint now() const override { return now_; }
  void advance(std::chrono::steady_clock::duration by) { now_ += by; }

 private:
  TimePoint now_{};
};

}  // namespace distrun::launch
