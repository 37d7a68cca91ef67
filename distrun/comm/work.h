#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace distrun::comm {

// A handle on one asynchronous operation. Copies share the operation.
// wait() may be called from any thread, any number of times; it rethrows
// the operation's error each time. A default-constructed Work is complete.
class Work {
 public:
  Work() = default;

  // Blocks until the operation has finished; rethrows its error.
  void wait() const;
  // True once the operation has finished (successfully or not).
  bool isCompleted() const;

 private:
  friend class WorkQueue;
  struct State {
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    std::exception_ptr error;
  };
  explicit Work(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// Runs submitted tasks one after another, in submission order, on one
// background thread started at the first submit. Thread-safety: submit()
// and drain() from one thread at a time (the communicator's caller).
class WorkQueue {
 public:
  WorkQueue() = default;
  ~WorkQueue();  // runs what is queued, then joins
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  Work submit(std::function<void()> task);
  // Blocks until every submitted task has finished.
  void drain();

 private:
  struct Item {
    std::function<void()> task;
    std::shared_ptr<Work::State> state;
  };
  void loop();
  static void finish(Work::State& state, std::exception_ptr error);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> items_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace distrun::comm
