// The Supervisor with --hang-timeout (docs/launcher.md, "Hung workers"):
// made-up progress samples and times in, the actions out.
#include <csignal>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/launch/supervisor.h"
#include "distrun/launch/supervisor_testing.h"

namespace distrun::launch {
namespace {

using supervisor_testing::kPort;
using supervisor_testing::names;
using supervisor_testing::printed;
using supervisor_testing::publishedEvents;

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Kind = JobEvent::Kind;

constexpr int kWorkers = 2;

AgentConfig hangConfig(int numNodes, int nodeRank, std::chrono::milliseconds hangTimeout = 10s) {
  AgentConfig c;
  c.layout.localWorldSize = kWorkers;
  c.layout.numNodes = numNodes;
  c.layout.nodeRank = nodeRank;
  c.termTimeout = 25s;
  c.hangTimeout = hangTimeout;
  c.runId = "job";
  c.storeHost = "head";
  return c;
}

// Worker `local` of a node whose first rank is `firstRank`, as sampled.
WorkerProgress progressOf(int firstRank, int local, long long cpu, bool stopped = false) {
  WorkerProgress p;
  p.record.rank = firstRank + local;
  p.record.localRank = local;
  p.record.nodeRank = firstRank / kWorkers;
  p.record.host = "node" + std::to_string(firstRank / kWorkers);
  p.record.pid = 1000 + firstRank + local;
  p.record.time = "2026-01-02T03:04:05Z";
  p.record.stderrTail = {"step 41"};
  p.cpuTicks = cpu * kMinProgressTicks;  // each step of `cpu` is progress
  p.stopped = stopped;
  return p;
}

WorkerFailure stoppedBySigterm(int firstRank, int local) {
  WorkerFailure f = progressOf(firstRank, local, 0).record;
  f.signal = SIGTERM;
  return f;
}

class SupervisorHangTest : public ::testing::Test {
 protected:
  Supervisor started(AgentConfig c) {
    Supervisor s(c, kPort);
    int firstRank = c.layout.nodeRank * kWorkers;
    s.start(now_);
    s.rendezvousCompleted(rdzv::World{0, 1, c.layout.numNodes * kWorkers, firstRank, "head", 1},
                          now_);
    for (int local = 0; local < kWorkers; ++local) s.workerStarted(local, 1000 + local, now_);
    return s;
  }
  // One sample of both workers of `s`'s node, `by` after the last one.
  Actions sample(Supervisor& s, int firstRank, long long cpu0, long long cpu1,
                 bool stopped1 = false, std::chrono::seconds by = 1s) {
    return s.progressSampled(
        {progressOf(firstRank, 0, cpu0), progressOf(firstRank, 1, cpu1, stopped1)}, at(by));
  }
  TimePoint at(std::chrono::seconds by) { return now_ += by; }

  TimePoint now_{};
};

TEST_F(SupervisorHangTest, OffWhenTheTimeoutIsZero) {
  Supervisor s = started(hangConfig(1, 0, 0s));
  for (int i = 0; i < 100; ++i) EXPECT_THAT(sample(s, 0, 5, 5, true, 10s), IsEmpty());
}

TEST_F(SupervisorHangTest, ProgressKeepsTheJobRunning) {
  Supervisor s = started(hangConfig(1, 0));
  for (int i = 0; i < 30; ++i) EXPECT_THAT(sample(s, 0, i, 100 - i, false, 5s), IsEmpty());
}

TEST_F(SupervisorHangTest, AStoppedWorkerEndsTheJobWithExit75NamingIt) {
  Supervisor s = started(hangConfig(1, 0));
  sample(s, 0, 5, 5);
  EXPECT_THAT(sample(s, 0, 6, 5, true, 9s), IsEmpty());
  std::vector<JobEvent> answer = publishedEvents(sample(s, 0, 7, 5, true));
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_EQ(answer[0].kind, Kind::kHang);
  EXPECT_THAT(sample(s, 0, 8, 5, true), IsEmpty()) << "the timeout fires once";

  std::vector<JobEvent> failure = publishedEvents(s.storeEvent(answer[0], now_));
  ASSERT_EQ(failure.size(), 1u);
  EXPECT_EQ(failure[0].kind, Kind::kFailure);
  WorkerFailure named = WorkerFailure::fromJson(failure[0].payload);
  EXPECT_EQ(named.rank, 1);
  EXPECT_TRUE(named.stopped);
  EXPECT_EQ(named.hungSeconds, 10);

  EXPECT_THAT(names(s.storeEvent(failure[0], now_)), ElementsAre("signal 15", "wake at 37000 ms"));
  EXPECT_THAT(sample(s, 0, 9, 5, true), IsEmpty()) << "stopping: no more samples judged";
  s.workerExited(stoppedBySigterm(0, 0), now_);
  Actions end = s.workerExited(stoppedBySigterm(0, 1), now_);
  EXPECT_EQ(describe(end.back()), "exit 75");
  EXPECT_THAT(printed(end),
              HasSubstr("root cause was rank 1 (local rank 1) on node 0 (node0), pid 1001, "
                        "stopped by a signal (state T), no progress for 10 s (--hang-timeout "
                        "10), at 2026-01-02T03:04:05Z\n"));
  EXPECT_THAT(printed(end), HasSubstr("'py-spy dump --pid 1001' or 'gdb -p 1001' on node0"));
}

TEST_F(SupervisorHangTest, AHangCountsAsAFailureForRestarts) {
  AgentConfig c = hangConfig(1, 0);
  c.maxRestarts = 1;
  Supervisor s = started(c);
  sample(s, 0, 5, 5);
  JobEvent answer = publishedEvents(sample(s, 0, 6, 5, false, 10s)).at(0);
  JobEvent failure = publishedEvents(s.storeEvent(answer, now_)).at(0);
  s.storeEvent(failure, now_);
  s.workerExited(stoppedBySigterm(0, 0), now_);
  Actions end = s.workerExited(stoppedBySigterm(0, 1), now_);
  EXPECT_THAT(printed(end), HasSubstr("rank 1 failed (no progress for 10 s); restarting"));
  EXPECT_THAT(names(end).back(), "join round 1");
}

TEST_F(SupervisorHangTest, AFailureFirstIsTheRootCauseAndHangsAreNoLongerJudged) {
  Supervisor s = started(hangConfig(1, 0));
  sample(s, 0, 5, 5);
  WorkerFailure crash = progressOf(0, 0, 0).record;
  crash.exitCode = 3;
  s.storeEvent(JobEvent{Kind::kFailure, crash.toJson()}, now_);
  EXPECT_THAT(sample(s, 0, 5, 5, true, 60s), IsEmpty());
  HangAnswer late{0, progressOf(0, 1, 5).record};
  late.worker->hungSeconds = 60;
  EXPECT_THAT(s.storeEvent(JobEvent{Kind::kHang, late.toJson()}, now_), IsEmpty());
}

// Node 0's ranks wait for node 1's rank 3 from before it was stopped, so
// node 0 notices first; node 1's answer names its stopped rank, and both
// nodes publish the same failure from the same events.
TEST_F(SupervisorHangTest, TwoNodesNameTheStoppedRankWhicheverNoticesFirst) {
  Supervisor node0 = started(hangConfig(2, 0));
  Supervisor node1 = started(hangConfig(2, 1));
  sample(node0, 0, 5, 5);
  sample(node1, 2, 5, 5, false, 0s);
  sample(node1, 2, 6, 6, false, 3s);
  sample(node0, 0, 5, 5, false, 0s);
  std::vector<JobEvent> store = publishedEvents(sample(node0, 0, 5, 5, false, 7s));
  ASSERT_EQ(store.size(), 1u) << "node 0 noticed";
  EXPECT_THAT(sample(node1, 2, 7, 6, true, 0s), IsEmpty()) << "rank 3: 7 s";

  std::vector<JobEvent> answer1 = publishedEvents(node1.storeEvent(store[0], now_));
  ASSERT_EQ(answer1.size(), 1u) << "node 1 answers";
  EXPECT_THAT(node0.storeEvent(store[0], now_), IsEmpty()) << "node 0 waits for node 1";
  std::vector<JobEvent> verdict0 = publishedEvents(node0.storeEvent(answer1[0], now_));
  std::vector<JobEvent> verdict1 = publishedEvents(node1.storeEvent(answer1[0], now_));
  ASSERT_EQ(verdict0.size(), 1u);
  ASSERT_EQ(verdict1.size(), 1u);
  EXPECT_EQ(verdict0[0].payload, verdict1[0].payload);
  WorkerFailure named = WorkerFailure::fromJson(verdict0[0].payload);
  EXPECT_EQ(named.rank, 3);
  EXPECT_EQ(named.nodeRank, 1);
  EXPECT_TRUE(named.stopped);
}

TEST_F(SupervisorHangTest, WithoutANodesAnswerTheGraceDecides) {
  Supervisor node0 = started(hangConfig(2, 0));
  sample(node0, 0, 5, 5);
  std::vector<JobEvent> answer = publishedEvents(sample(node0, 0, 6, 5, false, 10s));
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_THAT(node0.storeEvent(answer[0], now_), IsEmpty());
  EXPECT_THAT(sample(node0, 0, 7, 5, false, 4s), IsEmpty());
  std::vector<JobEvent> verdict = publishedEvents(sample(node0, 0, 8, 5, false, 1s));
  ASSERT_EQ(verdict.size(), 1u);
  EXPECT_EQ(WorkerFailure::fromJson(verdict[0].payload).rank, 1);
}

TEST_F(SupervisorHangTest, ANodeWithoutTheFlagStillAnswers) {
  Supervisor node1 = started(hangConfig(2, 1, 0s));
  HangAnswer first{0, progressOf(0, 1, 5).record};
  first.worker->hungSeconds = 10;
  std::vector<JobEvent> answer =
      publishedEvents(node1.storeEvent(JobEvent{Kind::kHang, first.toJson()}, now_));
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_FALSE(HangAnswer::fromJson(answer[0].payload).worker);
  std::vector<JobEvent> verdict = publishedEvents(node1.storeEvent(answer[0], now_));
  ASSERT_EQ(verdict.size(), 1u);
  EXPECT_EQ(WorkerFailure::fromJson(verdict[0].payload).rank, 1);
}

}  // namespace
}  // namespace distrun::launch
