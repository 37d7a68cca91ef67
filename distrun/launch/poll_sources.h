#pragma once

#include <signal.h>

#include <vector>

#include "distrun/common/unique_fd.h"

namespace distrun::launch {

// The agent's handled signals (CHLD TERM INT HUP QUIT USR1 USR2), blocked
// and read from a signalfd so the agent's loop sees them as events.
// Construct it before any thread starts, so every thread inherits the
// mask; workers unblock them before exec. Restores the previous mask when
// destroyed, except that SIGUSR1 and SIGUSR2 stay blocked: a warning that
// comes as the job ends has no worker left to go to, and must not kill
// distrun with their default action (blockWarningSignals). Throws
// SystemError. Not thread-safe.
// Blocks SIGUSR1 and SIGUSR2 in the calling thread: `distrun run` does so
// first, so that Slurm's warning (srun passes it on) arriving before the
// agent reads its signals waits for it instead of killing the agent.
// Throws SystemError.
void blockWarningSignals();

class SignalReader {
 public:
  SignalReader();
  ~SignalReader();
  SignalReader(const SignalReader&) = delete;
  SignalReader& operator=(const SignalReader&) = delete;

  int fd() const { return fd_.get(); }
  // The signals received since the last call, oldest first; never blocks.
  std::vector<int> read();

 private:
  UniqueFd fd_;
  sigset_t previous_;
};

// An eventfd: another thread's way to wake the agent's loop. notify() is
// safe from any thread; drain() from the loop's. Throws SystemError.
class EventFd {
 public:
  EventFd();
  int fd() const { return fd_.get(); }
  void notify();
  void drain();

 private:
  UniqueFd fd_;
};

}  // namespace distrun::launch
