#include "distrun/launch/hang_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::launch {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr std::chrono::milliseconds kTimeout = 10s;

WorkerProgress progressOf(int localRank, long long cpu, long long bytes = 0, bool stopped = false,
                          int firstRank = 0) {
  WorkerProgress p;
  p.record.rank = firstRank + localRank;
  p.record.localRank = localRank;
  p.record.pid = 1000 + firstRank + localRank;
  p.record.host = "node";
  p.cpuTicks = cpu * kMinProgressTicks;  // each step of `cpu` is progress
  p.outputBytes = bytes;
  p.stopped = stopped;
  return p;
}

WorkerFailure hungWorker(int rank, double seconds, bool stopped) {
  WorkerFailure f;
  f.rank = rank;
  f.hungSeconds = seconds;
  f.stopped = stopped;
  return f;
}

class HangWatchTest : public ::testing::Test {
 protected:
  // One sample `by` after the last one.
  bool sample(std::vector<WorkerProgress> workers, std::chrono::seconds by = 1s) {
    now_ += by;
    return watch_.sample(workers, kTimeout, now_);
  }

  HangWatch watch_;
  TimePoint now_{};
};

TEST_F(HangWatchTest, AWorkerWithoutProgressForTheTimeoutIsReportedOnce) {
  EXPECT_FALSE(sample({progressOf(0, 5), progressOf(1, 7)}));
  EXPECT_FALSE(sample({progressOf(0, 6), progressOf(1, 7)}, 9s));
  EXPECT_TRUE(sample({progressOf(0, 7), progressOf(1, 7)}, 1s));
  HangAnswer answer = watch_.answer(0);
  ASSERT_TRUE(answer.worker);
  EXPECT_EQ(answer.worker->rank, 1);
  EXPECT_EQ(answer.worker->hungSeconds, 10);
  EXPECT_EQ(answer.worker->hangTimeout, 10);
  EXPECT_FALSE(answer.worker->stopped);
  EXPECT_TRUE(watch_.answered());
  EXPECT_FALSE(sample({progressOf(0, 8), progressOf(1, 7)})) << "answered already";
}

// PyTorch's and Gloo's background threads use a tick now and then while
// the rank waits: under kMinProgressTicks a sample is no progress.
TEST_F(HangWatchTest, ATrickleOfCpuTimeIsNoProgress) {
  WorkerProgress w = progressOf(0, 5);
  sample({w});
  for (int i = 0; i < 9; ++i) {
    w.cpuTicks += kMinProgressTicks - 1;
    EXPECT_FALSE(sample({w}));
  }
  w.cpuTicks += kMinProgressTicks - 1;
  EXPECT_TRUE(sample({w})) << "10 s of trickle is 10 s without progress";
}

TEST_F(HangWatchTest, CpuTimeAndOutputAreEachProgress) {
  sample({progressOf(0, 5, 100)});
  EXPECT_FALSE(sample({progressOf(0, 6, 100)}, 9s));
  EXPECT_FALSE(sample({progressOf(0, 6, 101)}, 9s)) << "output resets the time";
  EXPECT_FALSE(sample({progressOf(0, 6, 101)}, 9s));
  EXPECT_TRUE(sample({progressOf(0, 6, 101)}, 1s));
}

// A worker spinning in a collective whose peer is gone burns CPU time: once
// it reported progress on DISTRUN_PROGRESS_FD, only its reports count.
TEST_F(HangWatchTest, AReportingWorkerIsJudgedByItsReportsAlone) {
  auto reporting = [](long long cpu, long long reports) {
    WorkerProgress p = progressOf(0, cpu, cpu);
    p.reports = reports;
    return p;
  };
  EXPECT_FALSE(sample({reporting(1, 1)}));
  EXPECT_FALSE(sample({reporting(100, 1)}, 9s));
  EXPECT_TRUE(sample({reporting(200, 1)}, 1s)) << "CPU time and output are no progress now";
  HangAnswer answer = watch_.answer(0);
  ASSERT_TRUE(answer.worker);
  EXPECT_TRUE(answer.worker->reportsProgress);
  EXPECT_EQ(answer.worker->hungSeconds, 10);
}

TEST_F(HangWatchTest, AReportIsProgressWithoutCpuTimeOrOutput) {
  WorkerProgress p = progressOf(0, 5);
  for (long long reports = 1; reports <= 30; ++reports) {
    p.reports = reports;
    EXPECT_FALSE(sample({p})) << reports;
  }
}

TEST_F(HangWatchTest, AWorkerThatExitedIsNoLongerWatched) {
  sample({progressOf(0, 5), progressOf(1, 5)});
  EXPECT_FALSE(sample({progressOf(0, 6)}, 10s));
  EXPECT_FALSE(watch_.answer(0).worker) << "rank 0 progressed, rank 1 exited";
}

TEST_F(HangWatchTest, TheAnswerNamesAStoppedWorkerBeforeOneIdleLonger) {
  sample({progressOf(0, 5), progressOf(1, 5), progressOf(2, 5)});
  sample({progressOf(0, 5), progressOf(1, 6), progressOf(2, 6)}, 3s);
  EXPECT_TRUE(sample({progressOf(0, 5), progressOf(1, 6, 0, true), progressOf(2, 7)}, 7s));
  HangAnswer answer = watch_.answer(3);
  EXPECT_EQ(answer.nodeRank, 3);
  ASSERT_TRUE(answer.worker);
  EXPECT_EQ(answer.worker->rank, 1);
  EXPECT_TRUE(answer.worker->stopped);
  EXPECT_EQ(answer.worker->hungSeconds, 7);
}

TEST_F(HangWatchTest, TheAnswerNamesTheWorkerIdleLongest) {
  sample({progressOf(0, 5), progressOf(1, 5)});
  sample({progressOf(0, 6), progressOf(1, 5)}, 2s);
  EXPECT_TRUE(sample({progressOf(0, 6), progressOf(1, 5)}, 8s));
  EXPECT_EQ(watch_.answer(0).worker->rank, 1);
}

TEST_F(HangWatchTest, ANodeWhoseWorkersAllProgressAnswersNone) {
  sample({progressOf(0, 5)});
  sample({progressOf(0, 6)});
  HangAnswer answer = watch_.answer(1);
  EXPECT_EQ(answer.nodeRank, 1);
  EXPECT_FALSE(answer.worker);
}

TEST_F(HangWatchTest, TheVerdictWaitsForEveryNodeAndComesOnce) {
  EXPECT_FALSE(watch_.verdict(2, now_)) << "no answer yet";
  watch_.take(HangAnswer{0, hungWorker(0, 12, false)}, now_);
  EXPECT_FALSE(watch_.verdict(2, now_));
  watch_.take(HangAnswer{0, hungWorker(1, 30, false)}, now_);
  EXPECT_FALSE(watch_.verdict(2, now_)) << "a node's second answer does not count";
  watch_.take(HangAnswer{1, hungWorker(3, 11, true)}, now_);
  std::optional<WorkerFailure> named = watch_.verdict(2, now_);
  ASSERT_TRUE(named);
  EXPECT_EQ(named->rank, 3) << "stopped, on the node that answered second";
  EXPECT_FALSE(watch_.verdict(2, now_));
}

TEST_F(HangWatchTest, TheVerdictComesAfterTheGraceWithoutEveryAnswer) {
  watch_.take(HangAnswer{1, hungWorker(2, 12, false)}, now_);
  watch_.take(HangAnswer{2, std::nullopt}, now_);
  EXPECT_FALSE(watch_.verdict(3, now_ + kHangAnswerGrace - 1ms));
  std::optional<WorkerFailure> named = watch_.verdict(3, now_ + kHangAnswerGrace);
  ASSERT_TRUE(named);
  EXPECT_EQ(named->rank, 2);
}

TEST(LikelierHangCauseTest, StoppedThenIdleLongestThenLowerRank) {
  EXPECT_TRUE(likelierHangCause(hungWorker(5, 1, true), hungWorker(0, 60, false)));
  EXPECT_FALSE(likelierHangCause(hungWorker(0, 60, false), hungWorker(5, 1, true)));
  EXPECT_TRUE(likelierHangCause(hungWorker(5, 20, false), hungWorker(0, 10, false)));
  EXPECT_TRUE(likelierHangCause(hungWorker(1, 10, true), hungWorker(2, 10, true)));
  EXPECT_FALSE(likelierHangCause(hungWorker(2, 10, true), hungWorker(1, 10, true)));
}

// Rank 1 sleeps; rank 0 waits for it in the all_reduce (its main thread
// on a futex, as PyTorch's gloo waits) and went idle at the same sample:
// the rank that waits for something else is named.
TEST(LikelierHangCauseTest, ARankWaitingForItsPeersIsNotTheCause) {
  WorkerFailure waiting = hungWorker(0, 10, false);
  waiting.waits = "futex_do_wait (main thread), do_epoll_wait x2, futex_do_wait x2";
  WorkerFailure sleeping = hungWorker(1, 10, false);
  sleeping.waits = "hrtimer_nanosleep (main thread), do_epoll_wait x2";
  EXPECT_TRUE(likelierHangCause(sleeping, waiting));
  EXPECT_FALSE(likelierHangCause(waiting, sleeping));
  WorkerFailure longer = waiting;
  longer.hungSeconds = 60;
  EXPECT_TRUE(likelierHangCause(sleeping, longer)) << "whatever their idle times";
  WorkerFailure stopped = hungWorker(2, 1, true);
  stopped.waits = "do_signal_stop (main thread)";
  EXPECT_TRUE(likelierHangCause(stopped, sleeping));
  WorkerFailure unknown = hungWorker(3, 20, false);
  EXPECT_TRUE(likelierHangCause(unknown, sleeping)) << "unknown waits: idle time decides";
  EXPECT_TRUE(waitsForPeers("ep_poll (main thread)"));
  EXPECT_TRUE(waitsForPeers("sk_wait_data (main thread), futex_wait_queue x3"));
  EXPECT_FALSE(waitsForPeers("hrtimer_nanosleep (main thread), futex_wait_queue x3"));
  EXPECT_FALSE(waitsForPeers("io_schedule (main thread)"));
  EXPECT_FALSE(waitsForPeers(""));
}

TEST(HangAnswerTest, CrossesNodesAsJson) {
  WorkerFailure w = hungWorker(3, 12.5, true);
  w.host = "gpu02";
  w.pid = 4711;
  w.hangTimeout = 10;
  w.stderrTail = {"step 40"};
  HangAnswer back = HangAnswer::fromJson(HangAnswer{1, w}.toJson());
  EXPECT_EQ(back.nodeRank, 1);
  ASSERT_TRUE(back.worker);
  EXPECT_EQ(back.worker->toJson(), w.toJson());
  EXPECT_FALSE(HangAnswer::fromJson(HangAnswer{2, std::nullopt}.toJson()).worker);
}

TEST(HangAnswerTest, AMalformedAnswerIsARendezvousError) {
  try {
    HangAnswer::fromJson("{\"node\": 1}");
    FAIL() << "no error";
  } catch (const RendezvousError& e) {
    EXPECT_THAT(e.what(), HasSubstr("malformed hang answer from a peer: "));
  }
}

}  // namespace
}  // namespace distrun::launch
