#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace distrun::comm {

// Keeps a CPU awake while this process waits on the network. In a virtual
// machine an idle vCPU halts, and waking it for the next packet goes
// through the host's scheduler: on the 2-vCPU VMs this project runs on, a
// Gloo exchange of a few bytes took anywhere from 0.4 to 3 ms for that
// reason (docs/comm.md). While at least one Scope is alive, a thread of
// the SCHED_IDLE class spins; it runs only on a CPU that has nothing else
// to run, and it sleeps on a condition variable when no operation is in
// flight. It takes no CPU time from real work, but a CPU it keeps busy
// does not go idle, so it does not pull threads queued on another CPU:
// they wait for the periodic load balancing (a 4 ms tick here;
// docs/training.md). Where the kernel refuses SCHED_IDLE the thread never
// spins.
class IdleSpinner {
 public:
  IdleSpinner();
  ~IdleSpinner();
  IdleSpinner(const IdleSpinner&) = delete;
  IdleSpinner& operator=(const IdleSpinner&) = delete;

  // Spinning while alive; nullptr: does nothing.
  class Scope {
   public:
    explicit Scope(IdleSpinner* spinner);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    IdleSpinner* spinner_;
  };

  // Rounds of spinning so far (for tests).
  uint64_t rounds() const { return rounds_.load(std::memory_order_relaxed); }

 private:
  void run();
  void enter();
  void leave();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<int> inFlight_{0};
  std::atomic<bool> stop_{false};  // set under mutex_, so the wait sees it
  std::atomic<uint64_t> rounds_{0};
  std::thread thread_;
};

}  // namespace distrun::comm
