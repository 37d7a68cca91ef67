#include "distrun/launch/status_line.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/launch/worker_output.h"

namespace distrun::launch {
namespace {

StatusRecord record(int64_t epoch, int64_t step, std::optional<double> loss = std::nullopt) {
  StatusRecord r;
  r.epoch = epoch;
  r.epochs = 2;
  r.step = step;
  r.steps = 100;
  r.loss = loss;
  return r;
}

TEST(JobProgressTest, TheLowestRanksRecordWithTheSlowestRankWhenOneIsBehind) {
  JobProgress p;
  EXPECT_EQ(p.summary(), std::nullopt);
  p.update({{1, record(1, 10)}, {0, record(1, 12, 0.5)}, {2, record(1, 11)}}, 0);
  ASSERT_TRUE(p.summary().has_value());
  EXPECT_TRUE(p.hasRankZero());
  EXPECT_EQ(p.summary()->loss, 0.5);
  EXPECT_EQ(p.summary()->step, 12);
  EXPECT_EQ(p.summary()->slowestRank, 1);
  EXPECT_EQ(p.summary()->slowestStep, 10);
  p.update({{1, record(1, 12)}, {0, record(1, 12, 0.5)}}, 0);
  EXPECT_EQ(p.summary()->slowestRank, std::nullopt) << "all at the same step";
  p.update({{3, record(1, 40)}, {2, record(2, 1)}}, 0);  // another node's ranks
  EXPECT_FALSE(p.hasRankZero());
  EXPECT_EQ(p.summary()->slowestRank, 3) << "an earlier epoch is behind";
  p.update({}, 0);
  EXPECT_EQ(p.summary(), std::nullopt);
}

TEST(JobProgressTest, TheEtaFromTheLeadRanksStepsPerSecondOverTheRun) {
  JobProgress p;
  p.update({{0, record(1, 10)}}, 0);
  EXPECT_EQ(p.summary()->etaSeconds, std::nullopt) << "one point is no rate";
  p.update({{0, record(1, 30)}}, 10);  // 2 steps a second
  // 70 steps of this epoch and 100 of the next
  EXPECT_DOUBLE_EQ(*p.summary()->etaSeconds, 85);
  p.update({{0, record(1, 30)}}, 20);  // the same record later: the rate stands
  EXPECT_DOUBLE_EQ(*p.summary()->etaSeconds, 85);
  p.update({{0, record(2, 10)}}, 60);  // 100 steps in 60 s, the pause between epochs too
  EXPECT_DOUBLE_EQ(*p.summary()->etaSeconds, 54);
  p.update({{0, record(1, 5)}}, 70);  // a restart: the last rate until it has its own
  EXPECT_DOUBLE_EQ(*p.summary()->etaSeconds, 117);
  p.update({{0, record(1, 15)}}, 75);
  EXPECT_DOUBLE_EQ(*p.summary()->etaSeconds, 92.5);
}

struct StatusFixture : ::testing::Test {
  std::ostringstream err;
  FakeClock clock;
  std::string folder = ::testing::TempDir() + "status_line_test_" + std::to_string(::getpid());
  void SetUp() override { std::filesystem::create_directories(folder); }
  void TearDown() override { std::filesystem::remove_all(folder); }
  AgentStatus status(StatusMode mode, const std::string& file = "") {
    return AgentStatus(mode, err, clock, file, [] { return 60; });
  }
  static std::string contents(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

TEST_F(StatusFixture, OnATerminalOneLineThatFitsAndIsErasedAtTheEnd) {
  AgentStatus s = status(StatusMode::kLine);
  s.update({});
  EXPECT_EQ(err.str(), "") << "nothing before the first record";
  StatusRecord r = record(1, 3, 0.25);
  r.samplesPerSecond = 900;
  s.update({{0, r}});
  EXPECT_EQ(err.str(), "\repoch 1/2  step 3/100  loss 0.2500  900 samples/s\x1b[K");
  s.finish();
  EXPECT_THAT(err.str(), ::testing::EndsWith("\r\x1b[K"));
}

TEST_F(StatusFixture, PlainLinesOnlyFromTheAgentThatSeesRankZero) {
  AgentStatus s = status(StatusMode::kPlain);
  s.update({{1, record(1, 3)}});
  clock.advance(std::chrono::seconds(31));
  s.update({{1, record(1, 40)}});
  EXPECT_EQ(err.str(), "");
  EXPECT_EQ(s.nextDue(), std::nullopt);
  s.update({{0, record(1, 40)}});
  EXPECT_EQ(err.str(), "distrun: epoch 1/2  step 40/100  ETA 2:14\n");  // 37 steps in 31 s
}

TEST_F(StatusFixture, TheStatusFileHoldsTheLastRecordAtMostEveryTwoSeconds) {
  const std::string file = folder + "/job.status";
  AgentStatus s = status(StatusMode::kNone, file);
  s.update({{0, record(1, 3)}});
  EXPECT_EQ(contents(file), "status epoch=1 epochs=2 step=3 steps=100\n");
  clock.advance(std::chrono::seconds(1));
  s.update({{0, record(1, 5)}, {1, record(1, 4)}});
  EXPECT_EQ(contents(file), "status epoch=1 epochs=2 step=3 steps=100\n") << "too soon";
  s.finish();
  EXPECT_EQ(contents(file),
            "status epoch=1 epochs=2 step=5 steps=100 slowest_rank=1 slowest_step=4 eta_s=97.5\n");
  EXPECT_EQ(err.str(), "");
}

TEST_F(StatusFixture, OnlyTheAgentThatSeesRankZeroWritesTheStatusFile) {
  const std::string file = folder + "/job.status";
  AgentStatus s = status(StatusMode::kNone, file);
  s.update({{2, record(1, 3)}});
  s.finish();
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST_F(StatusFixture, AStatusFileThatCannotBeWrittenIsSaidOnceAndTheJobGoesOn) {
  const std::string file = folder + "/missing/job.status";
  AgentStatus s = status(StatusMode::kNone, file);
  s.update({{0, record(1, 3)}});
  clock.advance(std::chrono::seconds(3));
  s.update({{0, record(1, 9)}});
  s.finish();
  const std::string said = err.str();
  EXPECT_THAT(said, ::testing::StartsWith("distrun: status file (DISTRUN_STATUS_FILE) " + file));
  EXPECT_THAT(said, ::testing::EndsWith(": not written again\n"));
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1);
}

// WorkerOutput's hunk: a console line erases the status line first; the
// agent's next update draws it again.
TEST_F(StatusFixture, AWorkersConsoleLineErasesTheStatusLineFirst) {
  AgentStatus s = status(StatusMode::kLine);
  s.update({{0, record(1, 3)}});
  ASSERT_TRUE(s.line().onScreen());
  WorkerOutput output("[0:0] ", StreamRoute{true, false, false, false}, "");
  output.setStatusLine(&s.line());
  output.onStdout("hello from the status line test\n");
  EXPECT_FALSE(s.line().onScreen());
  s.update({{0, record(1, 3)}});
  EXPECT_TRUE(s.line().onScreen());
  EXPECT_EQ(err.str(), "\repoch 1/2  step 3/100\x1b[K\r\x1b[K\repoch 1/2  step 3/100\x1b[K");
}

}  // namespace
}  // namespace distrun::launch
