#include "distrun/trace/recorder.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <sstream>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/trace/trace_testing.h"

namespace distrun::trace {
namespace {

using testing::readLines;
using testing::readText;
using testing::TempDir;

Header workerHeader() {
  Header h;
  h.rank = 1;
  h.worldSize = 2;
  h.localRank = 1;
  h.nodeRank = 0;
  h.host = "node\"1";
  h.pid = 4242;
  h.restart = 3;
  h.monotonicUs = 1230000.5;
  h.realtimeUs = 1795529098020914.75;
  return h;
}

RecorderOptions optionsFor(const std::string& path) {
  return RecorderOptions{.path = path, .flushEvery = std::chrono::milliseconds(0)};
}

TEST(RecorderTest, HeaderIsTheFirstLineAsTheContractSays) {
  TempDir dir;
  std::ostringstream warnings;
  { Recorder recorder(optionsFor(dir.file("rank1.jsonl")), workerHeader(), warnings); }
  const auto lines = readLines(dir.file("rank1.jsonl"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], nlohmann::json::parse(R"({"trace":"distrun","version":1,"rank":1,
      "world_size":2,"local_rank":1,"node_rank":0,"host":"node\"1","pid":4242,
      "process":"worker","restart":3,"clock":"monotonic_us","monotonic_us":1230000.5,
      "realtime_us":1795529098020914.75})"));
  EXPECT_TRUE(warnings.str().empty());
}

TEST(RecorderTest, EventsAreChromeTraceEvents) {
  TempDir dir;
  std::ostringstream warnings;
  {
    Recorder recorder(optionsFor(dir.file("t.jsonl")), workerHeader(), warnings);
    Args args;
    args.add("comm", 0).add("seq", uint64_t{17}).add("type", "float").add("ok", true);
    EXPECT_TRUE(
        recorder.write(spanLine("allreduce", "comm", Thread::kComm, 1234567.125, 80.5, args)));
    EXPECT_TRUE(recorder.write(instantLine("worker_started", "launcher", Thread::kLauncher, 5,
                                           Args().add("rank", 0).add("pid", 77))));
    EXPECT_TRUE(recorder.write(clockOffsetLine(-1250.5, 42)));
    EXPECT_TRUE(recorder.write(spanLine("forward", "train", Thread::kCompute, 1, 2, Args())));
  }
  const auto lines = readLines(dir.file("t.jsonl"));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[1], nlohmann::json::parse(R"({"name":"allreduce","cat":"comm","ph":"X",
      "ts":1234567.125,"dur":80.5,"tid":"comm",
      "args":{"comm":0,"seq":17,"type":"float","ok":true}})"));
  EXPECT_EQ(lines[2], nlohmann::json::parse(R"({"name":"worker_started","cat":"launcher",
      "ph":"i","ts":5.0,"s":"t","tid":"launcher","args":{"rank":0,"pid":77}})"));
  EXPECT_EQ(lines[3], nlohmann::json::parse(
                          R"({"clock_offset":{"to_rank":0,"offset_us":-1250.5,"rtt_us":42.0}})"));
  EXPECT_FALSE(lines[4].contains("args"));
  EXPECT_EQ(lines[4]["tid"], "compute");
}

TEST(RecorderTest, ArgsEscapeStringsAndWriteNonFiniteAsNull) {
  Args args;
  args.add("s", "a\"b\\c\nd\x01").add("x", std::nan("")).add("n", -3).add("f", 2.5);
  EXPECT_EQ(nlohmann::json::parse("{" + args.members() + "}"),
            nlohmann::json::parse(R"({"s":"a\"b\\c\nd\u0001","x":null,"n":-3,"f":2.5})"));
  Args more;
  more.add("bucket", 2);
  EXPECT_EQ(Args().merge(more).members(), R"("bucket":2)");
  EXPECT_EQ(Args(args).merge(Args()).members(), args.members());
}

TEST(RecorderTest, ThreadsWriteWholeLines) {
  TempDir dir;
  std::ostringstream warnings;
  constexpr int kThreads = 4;
  constexpr int kEach = 2000;
  {
    RecorderOptions options = optionsFor(dir.file("t.jsonl"));
    options.flushBytes = 4096;  // many flushes while the threads write
    options.flushEvery = std::chrono::milliseconds(1);
    Recorder recorder(options, workerHeader(), warnings);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&recorder, t] {
        for (int i = 0; i < kEach; ++i) {
          recorder.write(
              instantLine("e", "test", Thread::kComm, i, Args().add("t", t).add("i", i)));
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  const auto lines = readLines(dir.file("t.jsonl"));
  ASSERT_EQ(lines.size(), 1u + kThreads * kEach);
  std::vector<int> next(kThreads, 0);
  for (size_t i = 1; i < lines.size(); ++i) {
    const int t = lines[i]["args"]["t"];
    EXPECT_EQ(lines[i]["args"]["i"], next[static_cast<size_t>(t)]++);  // each thread's order
  }
}

TEST(RecorderTest, CapWritesItsLineLastAndHoldsTheSize) {
  TempDir dir;
  std::ostringstream warnings;
  constexpr uint64_t kCap = 4000;
  int accepted = 0;
  {
    RecorderOptions options = optionsFor(dir.file("t.jsonl"));
    options.maxBytes = kCap;
    Recorder recorder(options, workerHeader(), warnings);
    for (int i = 0; i < 1000; ++i) {
      accepted += recorder.write(instantLine("e", "test", Thread::kCompute, i, Args()));
    }
    EXPECT_TRUE(recorder.stopped());
  }
  EXPECT_LE(readText(dir.file("t.jsonl")).size(), kCap);
  const auto lines = readLines(dir.file("t.jsonl"));
  ASSERT_EQ(lines.size(), static_cast<size_t>(accepted) + 2);
  EXPECT_GT(accepted, 10);
  EXPECT_EQ(lines.back(), nlohmann::json::parse(R"({"trace_capped":{"bytes":4000}})"));
  EXPECT_TRUE(warnings.str().empty());
}

TEST(RecorderTest, AFullFileGetsNothingMore) {
  TempDir dir;
  std::ostringstream warnings;
  RecorderOptions options = optionsFor(dir.file("t.jsonl"));
  options.maxBytes = 400;  // one header (about 250 bytes) and the room for the cap line
  { Recorder first(options, workerHeader(), warnings); }
  const std::string before = readText(dir.file("t.jsonl"));
  {
    Recorder second(options, workerHeader(), warnings);  // a second header would not fit
    EXPECT_TRUE(second.stopped());
    EXPECT_FALSE(second.write("{}"));
  }
  EXPECT_EQ(readText(dir.file("t.jsonl")), before);
}

TEST(RecorderTest, ARestartedProcessAppendsItsOwnPart) {
  TempDir dir;
  std::ostringstream warnings;
  {
    Recorder first(optionsFor(dir.file("t.jsonl")), workerHeader(), warnings);
    first.write(instantLine("a", "test", Thread::kCompute, 1, Args()));
  }
  Header again = workerHeader();
  again.restart = 4;
  { Recorder second(optionsFor(dir.file("t.jsonl")), again, warnings); }
  const auto lines = readLines(dir.file("t.jsonl"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["restart"], 3);
  EXPECT_EQ(lines[2]["restart"], 4);
}

// A part cut short mid-write (SIGKILL) ends in a partial line: the next
// part cuts it off, so that the file stays whole lines.
TEST(RecorderTest, APartialLastLineIsCutBeforeTheNextPart) {
  TempDir dir;
  std::ostringstream warnings;
  {
    Recorder first(optionsFor(dir.file("t.jsonl")), workerHeader(), warnings);
    first.write(instantLine("whole", "test", Thread::kCompute, 1, Args()));
  }
  { std::ofstream(dir.file("t.jsonl"), std::ios::app) << R"({"name":"cut sh)"; }
  { Recorder second(optionsFor(dir.file("t.jsonl")), workerHeader(), warnings); }
  const auto lines = readLines(dir.file("t.jsonl"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1]["name"], "whole");
  EXPECT_EQ(lines[2]["trace"], "distrun");
}

// SIGKILL: what was flushed is whole lines; what was buffered is lost.
TEST(RecorderTest, SigkillLeavesWholeLines) {
  TempDir dir;
  const std::string path = dir.file("t.jsonl");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::ostringstream warnings;
    Recorder recorder(optionsFor(path), workerHeader(), warnings);
    for (int i = 0; i < 5; ++i)
      recorder.write(instantLine("kept", "test", Thread::kCompute, i, {}));
    recorder.flush();
    recorder.write(instantLine("lost", "test", Thread::kCompute, 9, {}));
    ::raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  const std::string text = readText(path);
  EXPECT_EQ(text.back(), '\n');
  const auto lines = readLines(path);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[5]["name"], "kept");
}

TEST(RecorderTest, AFileThatCannotBeOpenedIsAnIoErrorNamingIt) {
  std::ostringstream warnings;
  try {
    Recorder recorder(optionsFor("/dev/null/t.jsonl"), workerHeader(), warnings);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(),
                 "DISTRUN_TRACE (--trace) file /dev/null/t.jsonl: cannot open: Not a directory");
  }
}

TEST(RecorderTest, AFailedWriteWarnsOnceAndStops) {
  std::ostringstream warnings;
  RecorderOptions options = optionsFor("/dev/full");
  options.flushBytes = 1;
  Recorder recorder(options, workerHeader(), warnings);  // the header's write fails
  EXPECT_TRUE(recorder.stopped());
  EXPECT_FALSE(recorder.write("{}"));
  EXPECT_EQ(warnings.str(),
            "distrun: warning: DISTRUN_TRACE (--trace) file /dev/full: cannot write: No space "
            "left on device; the trace stops here\n");
}

}  // namespace
}  // namespace distrun::trace
