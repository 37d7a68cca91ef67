#include "distrun/comm/idle_spinner.h"

#include <pthread.h>
#include <sched.h>

#include <utility>

namespace distrun::comm {

namespace {

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

bool becomeIdleClass() {
  sched_param param{};
  param.sched_priority = 0;
  return ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &param) == 0;
}

}  // namespace

IdleSpinner::IdleSpinner() : IdleSpinner(std::function<void()>{}) {}

IdleSpinner::IdleSpinner(std::function<void()> afterWaking)
    : afterWaking_(std::move(afterWaking)), thread_([this] { run(); }) {}

IdleSpinner::~IdleSpinner() {
  stop_.store(true);
  inFlight_.fetch_add(1);  // the wait below returns on a changed count
  inFlight_.notify_one();
  thread_.join();
}

// The wait sleeps on the count's futex while it is 0 and returns at once
// when it is not; a spurious return only spins the loop once more.
void IdleSpinner::run() {
  ::pthread_setname_np(::pthread_self(), "distrun-spin");  // for top -H, perf sched
  if (!becomeIdleClass()) return;  // at normal priority it would take real CPU
  while (!stop_.load()) {
    inFlight_.wait(0);
    if (afterWaking_) afterWaking_();
    while (inFlight_.load(std::memory_order_relaxed) > 0 &&
           !stop_.load(std::memory_order_relaxed)) {
      for (int i = 0; i < 64; ++i) pause();
      rounds_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void IdleSpinner::enter() {
  if (inFlight_.fetch_add(1) == 0) inFlight_.notify_one();
}

void IdleSpinner::leave() { inFlight_.fetch_sub(1); }

IdleSpinner::Scope::Scope(IdleSpinner* spinner) : spinner_(spinner) {
  if (spinner_) spinner_->enter();
}

IdleSpinner::Scope::~Scope() {
  if (spinner_) spinner_->leave();
}

}  // namespace distrun::comm
