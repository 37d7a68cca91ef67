#pragma once

#include <chrono>

namespace distrun {

using TimePoint = std::chrono::steady_clock::time_point;

// Where a policy reads the time: the seam that keeps its deadlines testable
// without waiting (the agent's Supervisor, its status line, the hang watch;
// docs/development.md, "Seams"). Code that only measures how long something
// took, spins on a deadline of its own in a hot loop (the shared-memory
// engine), or has the kernel wait a deadline out (the store server's
// epoll_wait, the doctor's probe on the store: a fake clock could not end
// that wait) reads std::chrono::steady_clock itself. Implementations are
// thread-safe.
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

}  // namespace distrun
