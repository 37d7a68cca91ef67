#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

namespace distrun::comm {

// Keeps a CPU awake while this process waits on the network. In a virtual
// machine an idle vCPU halts, and waking it for the next packet goes
// through the host's scheduler: on the 2-vCPU VMs this project runs on, a
// Gloo exchange of a few bytes took anywhere from 0.4 to 3 ms for that
// reason (docs/comm.md). While at least one Scope is alive, a thread of
// the SCHED_IDLE class spins; it runs only on a CPU that has nothing else
// to run, and it sleeps on a futex when no operation is in flight.
//
// Opening a Scope never waits for the spinning thread: it counts up an
// atomic and wakes the futex. A lock shared with the thread could invert
// priorities on a busy CPU, where the idle-class thread, preempted while
// holding it, runs again only when the CPU has nothing else to do.
//
// The idle class is idle only among the threads of its own task group:
// its session's autogroup, or its cgroup. Against another group's threads
// it competes with its group's weight, and took up to half their CPU (4
// ranks of two agents on 2 cores trained 10x slower): GlooOptions::Spin.
//
// Within its group it takes no CPU time from real work, but a CPU it keeps busy
// does not go idle, so it does not pull threads queued on another CPU:
// they wait for the periodic load balancing (a 4 ms tick here). Where the
// kernel refuses SCHED_IDLE the thread never spins.
class IdleSpinner {
 public:
  IdleSpinner();
  // For tests: `afterWaking` runs on the spinning thread each time it wakes,
  // before it spins (a test holds it there to stand for a starved thread).
  explicit IdleSpinner(std::function<void()> afterWaking);
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

  std::function<void()> afterWaking_;
  std::atomic<int> inFlight_{0};  // Scopes alive; the thread waits on it
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rounds_{0};
  std::thread thread_;
};

}  // namespace distrun::comm
