#include "distrun/comm/idle_spinner.h"

#include <pthread.h>
#include <sched.h>

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

IdleSpinner::IdleSpinner() : thread_([this] { run(); }) {}

IdleSpinner::~IdleSpinner() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void IdleSpinner::run() {
  ::pthread_setname_np(::pthread_self(), "distrun-spin");  // for top -H, perf sched
  if (!becomeIdleClass()) return;  // at normal priority it would take real CPU
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || inFlight_.load() > 0; });
    if (stop_) return;
    lock.unlock();
    while (inFlight_.load(std::memory_order_relaxed) > 0 &&
           !stop_.load(std::memory_order_relaxed)) {
      for (int i = 0; i < 64; ++i) pause();
      rounds_.fetch_add(1, std::memory_order_relaxed);
    }
    lock.lock();
  }
}

void IdleSpinner::enter() {
  if (inFlight_.fetch_add(1) == 0) {
    std::lock_guard lock(mutex_);  // the spinner checks inFlight_ under it
    wake_.notify_one();
  }
}

void IdleSpinner::leave() { inFlight_.fetch_sub(1); }

IdleSpinner::Scope::Scope(IdleSpinner* spinner) : spinner_(spinner) {
  if (spinner_) spinner_->enter();
}

IdleSpinner::Scope::~Scope() {
  if (spinner_) spinner_->leave();
}

}  // namespace distrun::comm
