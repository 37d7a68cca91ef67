#include "distrun/trace/trace.h"

#include <unistd.h>

#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/trace/clock.h"
#include "distrun/trace/trace_testing.h"

namespace distrun::trace {
namespace {

using ::testing::ElementsAre;
using testing::eventsNamed;
using testing::readLines;
using testing::TempDir;

// Each test starts and stops the process's recording.
class TraceTest : public ::testing::Test {
 protected:
  ~TraceTest() override { stopForTesting(); }

  MapEnvironment tracing(std::map<std::string, std::string> more = {}) {
    more["DISTRUN_TRACE"] = dir_.path();
    return MapEnvironment(std::move(more));
  }
  std::vector<nlohmann::json> lines(int rank) {
    stopForTesting();
    return readLines(dir_.file("rank" + std::to_string(rank) + ".jsonl"));
  }
  std::vector<int64_t> stepsIn(const std::vector<nlohmann::json>& all) {
    std::vector<int64_t> steps;
    for (const auto& e : eventsNamed(all, "step")) steps.push_back(e["args"]["global_step"]);
    return steps;
  }

  TempDir dir_;
};

TEST_F(TraceTest, OffWritesNothingAndBuildsNoArgs) {
  EXPECT_FALSE(startProcess(MapEnvironment{{"RANK", "0"}}, 0, 1));
  EXPECT_FALSE(started());
  EXPECT_FALSE(enabled());
  Span span("forward");
  EXPECT_FALSE(span.active());
  span.arg("step", 1);
  instant("x", "test", Thread::kCompute, Args().add("a", 1));
  { StepSpan step(1, 1, 1); }
  EXPECT_TRUE(std::filesystem::is_empty(dir_.path()));
}

TEST_F(TraceTest, StartsOnceWithTheHeaderFromTheEnvironment) {
  ASSERT_TRUE(startProcess(
      tracing({{"LOCAL_RANK", "1"}, {"GROUP_RANK", "2"}, {"TORCHELASTIC_RESTART_COUNT", "1"}}), 3,
      4));
  EXPECT_FALSE(startProcess(tracing(), 3, 4));  // once
  EXPECT_TRUE(started());
  EXPECT_TRUE(enabled());
  const double before = monotonicUs();
  {
    Span span("forward");
    span.arg("step", 7);
  }
  instant("mark", "test", Thread::kData, Args().add("a", "b"));
  writeClockOffset(-12.5, 3);
  const auto all = lines(3);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0]["rank"], 3);
  EXPECT_EQ(all[0]["world_size"], 4);
  EXPECT_EQ(all[0]["local_rank"], 1);
  EXPECT_EQ(all[0]["node_rank"], 2);
  EXPECT_EQ(all[0]["restart"], 1);
  EXPECT_EQ(all[0]["process"], "worker");
  EXPECT_EQ(all[0]["pid"], ::getpid());
  EXPECT_EQ(all[1]["name"], "forward");
  EXPECT_EQ(all[1]["args"]["step"], 7);
  EXPECT_GE(all[1]["ts"].get<double>(), before - 1);
  EXPECT_GE(all[1]["dur"].get<double>(), 0);
  EXPECT_EQ(all[2]["tid"], "data");
  EXPECT_EQ(all[3]["clock_offset"]["offset_us"], -12.5);
}

TEST_F(TraceTest, WithoutLayoutVariablesTheStandaloneRulesHold) {
  ASSERT_TRUE(startProcess(tracing(), 1, 2));
  const auto all = lines(1);
  EXPECT_EQ(all[0]["local_rank"], 1);
  EXPECT_EQ(all[0]["node_rank"], 0);
  EXPECT_EQ(all[0]["restart"], 0);
}

TEST_F(TraceTest, TheWindowKeepsItsStepsOnly) {
  ASSERT_TRUE(startProcess(tracing({{"DISTRUN_TRACE_STEPS", "2:3"}}), 0, 1));
  EXPECT_FALSE(enabled());  // setup, before step 2
  { Span setup("snapshot_load"); }
  writeClockOffset(0, 0);  // always written
  for (int64_t g = 1; g <= 5; ++g) {
    StepSpan step(1, g, g);
    Span forward("forward");
  }
  { Span after("evaluate"); }
  EXPECT_FALSE(enabled());
  EXPECT_EQ(currentStep(), 5);
  const auto all = lines(0);
  EXPECT_THAT(stepsIn(all), ElementsAre(2, 3));
  EXPECT_EQ(eventsNamed(all, "forward").size(), 2u);
  EXPECT_TRUE(eventsNamed(all, "snapshot_load").empty());
  EXPECT_TRUE(eventsNamed(all, "evaluate").empty());
  EXPECT_EQ(all[1]["clock_offset"]["rtt_us"], 0);
}

TEST_F(TraceTest, WithoutAWindowEverythingIsRecorded) {
  ASSERT_TRUE(startProcess(tracing(), 0, 1));
  { Span setup("snapshot_load"); }
  for (int64_t g = 1; g <= 3; ++g) StepSpan step(1, g, g);
  { Span after("evaluate"); }
  const auto all = lines(0);
  EXPECT_THAT(stepsIn(all), ElementsAre(1, 2, 3));
  EXPECT_EQ(eventsNamed(all, "snapshot_load").size(), 1u);
  EXPECT_EQ(eventsNamed(all, "evaluate").size(), 1u);
}

TEST_F(TraceTest, TheCapStopsTheRecording) {
  ASSERT_TRUE(startProcess(tracing({{"DISTRUN_TRACE_MAX_MB", "1"}}), 0, 1));
  int64_t g = 0;
  while (enabled() && g < 100000) {
    ++g;
    StepSpan step(1, g, g);
  }
  EXPECT_FALSE(enabled());
  EXPECT_LT(g, 100000);
  const auto all = lines(0);
  EXPECT_EQ(all.back(), nlohmann::json::parse(R"({"trace_capped":{"bytes":1048576}})"));
  EXPECT_LE(std::filesystem::file_size(dir_.file("rank0.jsonl")), uint64_t{1} << 20);
}

// The test seam: each rank's clock is shifted by its entry, header included.
TEST_F(TraceTest, TheSkewSeamShiftsThisRanksClock) {
  ASSERT_TRUE(startProcess(tracing({{"DISTRUN_TRACE_CLOCK_SKEW_US", "0,5000000"}}), 1, 2));
  const double shifted = now() - monotonicUs();
  EXPECT_GT(shifted, 4.9e6);
  EXPECT_LT(shifted, 5.1e6);
  const auto all = lines(1);
  const double monotonic = all[0]["monotonic_us"];
  const double realtime = all[0]["realtime_us"];
  EXPECT_GT(monotonic - monotonicUs(), 4e6);
  EXPECT_GT(realtime - realtimeUs(), 4e6);  // as if the host's clocks were both off
}

TEST_F(TraceTest, ThreadsRecordTogether) {
  ASSERT_TRUE(startProcess(tracing(), 0, 1));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 500; ++i) Span("allreduce", "comm", Thread::kComm).arg("t", t);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(eventsNamed(lines(0), "allreduce").size(), 2000u);
}

TEST_F(TraceTest, AFolderThatCannotBeMadeFailsEveryStart) {
  const MapEnvironment env{{"DISTRUN_TRACE", "/dev/null/trace"}};
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      startProcess(env, 0, 1);
      FAIL() << "no error";
    } catch (const IoError& e) {
      EXPECT_STREQ(e.what(),
                   "DISTRUN_TRACE (--trace) /dev/null/trace: cannot create the folder: Not a "
                   "directory");
    }
  }
  EXPECT_FALSE(enabled());
}

TEST_F(TraceTest, CollectiveNotesNest) {
  EXPECT_EQ(CollectiveNote::current(), nullptr);
  Args outer;
  outer.add("bucket", 0);
  {
    CollectiveNote a(outer);
    Args inner;
    inner.add("bucket", 1);
    {
      CollectiveNote b(inner);
      EXPECT_EQ(CollectiveNote::current(), &inner);
    }
    EXPECT_EQ(CollectiveNote::current(), &outer);
  }
  EXPECT_EQ(CollectiveNote::current(), nullptr);
}

}  // namespace
}  // namespace distrun::trace
