#include "distrun/common/status_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "distrun/common/pipe_testing.h"

namespace distrun {
namespace {

using testing::nonBlockingPipe;
using testing::TestPipe;

StatusRecord fullRecord() {
  StatusRecord r;
  r.epoch = 2;
  r.epochs = 3;
  r.step = 120;
  r.steps = 500;
  r.loss = 0.2345;
  r.samplesPerSecond = 812.5;
  return r;
}

TEST(StatusRecordTest, TheDocumentedLine) {
  EXPECT_EQ(formatStatusRecord(fullRecord()),
            "status epoch=2 epochs=3 step=120 steps=500 loss=0.2345 samples_per_s=812.5\n");
  EXPECT_EQ(formatStatusRecord(StatusRecord{}), "status\n");
  StatusRecord agent;
  agent.step = 7;
  agent.etaSeconds = 83;
  agent.slowestRank = 1;
  agent.slowestStep = 6;
  EXPECT_EQ(formatStatusRecord(agent), "status step=7 slowest_rank=1 slowest_step=6 eta_s=83\n");
}

TEST(StatusRecordTest, WhatIsWrittenIsReadBack) {
  const std::string line = formatStatusRecord(fullRecord());
  EXPECT_EQ(parseStatusRecord(line.substr(0, line.size() - 1)), fullRecord());
}

// The Python example of docs/launcher.md writes exactly this.
TEST(StatusRecordTest, FieldsInAnyOrderUnknownOnesSkipped) {
  std::optional<StatusRecord> r =
      parseStatusRecord("status  loss=0.5 future=x step=3 epoch=1 samples_per_s=1e3");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->step, 3);
  EXPECT_EQ(r->epoch, 1);
  EXPECT_EQ(r->loss, 0.5);
  EXPECT_EQ(r->samplesPerSecond, 1000.0);
  EXPECT_EQ(r->steps, std::nullopt);
}

TEST(StatusRecordTest, AFieldThatDoesNotParseIsDropped) {
  std::optional<StatusRecord> r =
      parseStatusRecord("status step=3x epoch= loss=nan samples_per_s=inf steps=10 x y=");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->step, std::nullopt);
  EXPECT_EQ(r->epoch, std::nullopt);
  EXPECT_EQ(r->loss, std::nullopt);
  EXPECT_EQ(r->samplesPerSecond, std::nullopt);
  EXPECT_EQ(r->steps, 10);
}

TEST(StatusRecordTest, ALineWithoutTheWordIsNoRecord) {
  for (const char* line : {"", "step=3", "statusstep=3", "mystatus step=3", "...", "STATUS"}) {
    EXPECT_EQ(parseStatusRecord(line), std::nullopt) << line;
  }
  EXPECT_EQ(parseStatusRecord("...status step=3")->step, 3);  // reports before it
  EXPECT_EQ(parseStatusRecord("status")->step, std::nullopt);
}

TEST(StatusRecordTest, HumanWords) {
  StatusRecord r = fullRecord();
  EXPECT_EQ(describeStatus(r), "epoch 2/3  step 120/500  loss 0.2345  812 samples/s");
  r.etaSeconds = 83;
  r.slowestRank = 1;
  r.slowestStep = 118;
  EXPECT_EQ(describeStatus(r),
            "epoch 2/3  step 120/500  loss 0.2345  812 samples/s  ETA 1:23  slowest rank 1 "
            "(step 118)");
  StatusRecord bare;
  EXPECT_EQ(describeStatus(bare), "");
  bare.step = 4;
  bare.samplesPerSecond = 2.25;
  EXPECT_EQ(describeStatus(bare), "step 4  2.2 samples/s");
}

TEST(StatusRecordTest, Durations) {
  EXPECT_EQ(formatDuration(0), "0 s");
  EXPECT_EQ(formatDuration(-3), "0 s");
  EXPECT_EQ(formatDuration(42.4), "42 s");
  EXPECT_EQ(formatDuration(83), "1:23");
  EXPECT_EQ(formatDuration(3723), "1:02:03");
}

TEST(StatusRecordReaderTest, ReportsBetweenRecordsAndRecordsSplitAcrossReads) {
  StatusRecordReader reader;
  reader.feed("....");
  EXPECT_EQ(reader.latest(), std::nullopt);
  reader.feed("..status step=1\n..status st");
  EXPECT_EQ(reader.latest()->step, 1);
  reader.feed("ep=2 loss=0.5");
  EXPECT_EQ(reader.latest()->step, 1);  // not ended yet
  reader.feed("\n...");
  EXPECT_EQ(reader.latest()->step, 2);
  reader.feed("garbage\n");
  EXPECT_EQ(reader.latest()->step, 2);  // a line that is no record changes nothing
}

TEST(StatusRecordReaderTest, AnOverlongLineIsDroppedWhole) {
  StatusRecordReader reader;
  reader.feed("status step=1\n");
  reader.feed("status step=9 " + std::string(StatusRecordReader::kMaxLine, 'x') + "\n");
  EXPECT_EQ(reader.latest()->step, 1);
  reader.feed("status step=3\n");
  EXPECT_EQ(reader.latest()->step, 3);
}

std::string drain(int fd) {
  char buffer[4096];
  ssize_t n = ::read(fd, buffer, sizeof(buffer));
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
}

TEST(StatusReporterTest, AtMostOneRecordPerIntervalUnlessForced) {
  TestPipe pipe = nonBlockingPipe();
  double now = 0;
  StatusReporter reporter(
      pipe.write.get(), [&] { return now; }, 0.1);
  StatusRecord r;
  r.step = 1;
  EXPECT_TRUE(reporter.due());
  reporter.report(r);
  r.step = 2;
  now = 0.05;
  EXPECT_FALSE(reporter.due());
  reporter.report(r);  // too soon: dropped
  r.step = 3;
  reporter.report(r, true);
  now = 0.2;
  r.step = 4;
  reporter.report(r);
  EXPECT_EQ(drain(pipe.read.get()), "status step=1\nstatus step=3\nstatus step=4\n");
}

TEST(StatusReporterTest, AFullOrClosedPipeOrNoneIsIgnored) {
  TestPipe pipe = nonBlockingPipe();
  StatusReporter reporter(
      pipe.write.get(), [] { return 0.0; }, 0);
  const int size = ::fcntl(pipe.write.get(), F_GETPIPE_SZ);
  for (int i = 0; i <= size / 8; ++i) reporter.report(fullRecord());  // fills it
  pipe.read.reset();
  reporter.report(fullRecord());  // EPIPE, no SIGPIPE
  StatusReporter none(-1, [] { return 0.0; });
  EXPECT_FALSE(none.due());
  none.report(fullRecord());
  SUCCEED();
}

}  // namespace
}  // namespace distrun
