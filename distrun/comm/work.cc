#include "distrun/comm/work.h"

#include <pthread.h>

namespace distrun::comm {

void Work::wait() const {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  state_->done.wait(lock, [&] { return state_->finished; });
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Work::isCompleted() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mutex);
  return state_->finished;
}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Work WorkQueue::submit(std::function<void()> task) {
  auto state = std::make_shared<Work::State>();
  {
    std::lock_guard lock(mutex_);
    items_.push_back(Item{std::move(task), state});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  changed_.notify_all();
  return Work(state);
}

void WorkQueue::drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return items_.empty() && running_ == 0; });
}

void WorkQueue::loop() {
  ::pthread_setname_np(::pthread_self(), "distrun-comm");  // for top -H, perf sched
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !items_.empty(); });
    if (items_.empty()) return;  // stopping, nothing left
    Item item = std::move(items_.front());
    items_.pop_front();
    ++running_;
    lock.unlock();
    std::exception_ptr error;
    try {
      item.task();
    } catch (...) {
      error = std::current_exception();
    }
    finish(*item.state, error);
    lock.lock();
    --running_;
    changed_.notify_all();
  }
}

void WorkQueue::finish(Work::State& state, std::exception_ptr error) {
  {
    std::lock_guard lock(state.mutex);
    state.finished = true;
    state.error = error;
  }
  state.done.notify_all();
}

}  // namespace distrun::comm
