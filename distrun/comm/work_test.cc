#include "distrun/comm/work.h"

#include <pthread.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace distrun::comm {
namespace {

TEST(WorkTest, DefaultWorkIsComplete) {
  Work w;
  EXPECT_TRUE(w.isCompleted());
  w.wait();
}

TEST(WorkQueueTest, ItsThreadIsNamedForProcessListings) {
  WorkQueue queue;
  std::string name;
  queue
      .submit([&name] {
        char buffer[16] = {};
        ::pthread_getname_np(::pthread_self(), buffer, sizeof buffer);
        name = buffer;
      })
      .wait();
  EXPECT_EQ(name, "distrun-comm");
}

TEST(WorkQueueTest, RunsInSubmissionOrder) {
  std::vector<int> order;
  WorkQueue queue;
  std::vector<Work> works;
  for (int i = 0; i < 100; ++i) works.push_back(queue.submit([&order, i] { order.push_back(i); }));
  for (Work& w : works) w.wait();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
}

TEST(WorkQueueTest, WaitRethrowsTheTaskErrorEveryTime) {
  WorkQueue queue;
  Work w = queue.submit([] { throw std::runtime_error("peer lost"); });
  EXPECT_THROW(w.wait(), std::runtime_error);
  EXPECT_THROW(w.wait(), std::runtime_error);
  EXPECT_TRUE(w.isCompleted());
  Work next = queue.submit([] {});
  next.wait();  // the queue itself goes on
}

TEST(WorkQueueTest, DrainWaitsForEverything) {
  std::atomic<int> done{0};
  WorkQueue queue;
  for (int i = 0; i < 10; ++i) queue.submit([&done] { ++done; });
  queue.drain();
  EXPECT_EQ(done.load(), 10);
}

TEST(WorkQueueTest, DestructionRunsWhatIsQueued) {
  std::atomic<int> done{0};
  {
    WorkQueue queue;
    for (int i = 0; i < 10; ++i) queue.submit([&done] { ++done; });
  }
  EXPECT_EQ(done.load(), 10);
}

}  // namespace
}  // namespace distrun::comm
