// PyTorch profiler exports in a trace folder (docs/observability.md,
// "Python jobs"): both forms, their placement, and what is refused.
#include <ostream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/trace_merge/merge.h"
#include "distrun/trace_merge/trace_test_folder.h"

namespace distrun::trace_merge {
namespace {

using nlohmann::json;
using testing::agentHeader;
using ::testing::Contains;
using ::testing::HasSubstr;
using testing::kMono;
using testing::kReal;
using testing::merge;
using testing::Merged;
using testing::span;
using testing::TraceFolder;
using testing::workerHeader;
using testing::workerStarted;

// What export_chrome_trace writes: ts from the profiler's start.
json legacyEvents(double first) {
  return json::array({
      {{"name", "aten::ones"},
       {"ph", "X"},
       {"ts", first},
       {"dur", 16},
       {"tid", 1},
       {"pid", "CPU functions"},
       {"args", json::object()}},
      {{"name", "aten::mul"},
       {"ph", "X"},
       {"ts", first + 100},
       {"dur", 5},
       {"tid", 1},
       {"pid", "CPU functions"},
       {"args", json::object()}},
  });
}

json objectForm(double first, double clockStart, double realtimeStart, const std::string& host) {
  return {{"traceEvents", legacyEvents(first)},
          {"distrunClockStartUs", clockStart},
          {"distrunRealtimeStartUs", realtimeStart},
          {"distrunHost", host}};
}

TEST(TorchMergeTest, TheObjectFormIsPlacedExactlyOnOneHost) {
  TraceFolder folder;
  // Rank 1's profiler started 1000 us after rank 0's; the real-time
  // readings are 3 s off, and are not used on one host.
  folder.appendText("torch-rank0.json", objectForm(10, kMono, kReal, "node1").dump());
  folder.appendText("torch-rank1.json",
                    objectForm(10, kMono + 1000, kReal + 3'000'000, "node1").dump());
  Merged m = merge(folder);
  std::vector<json> mul = m.named("aten::mul");
  ASSERT_EQ(mul.size(), 2u);
  EXPECT_EQ(mul[0]["pid"], 1);
  EXPECT_EQ(mul[1]["pid"], 2);
  EXPECT_EQ(mul[1]["ts"].get<double>() - mul[0]["ts"].get<double>(), 1000.0);
  EXPECT_EQ(m.named("aten::ones")[0]["ts"], 0.0);
  EXPECT_EQ(m.threadName(mul[0]), "torch");
  EXPECT_EQ(m.processName(2), "rank 1 (node1)");
  EXPECT_EQ(mul[0]["cat"], "torch");
  EXPECT_EQ(m.report.ranks, 2);
  EXPECT_EQ(m.report.torchExports, 2);
  EXPECT_TRUE(m.report.notes.empty()) << m.report.notes.front();
}

TEST(TorchMergeTest, TheBackendsCollectivesAreLinkedInTheirOrder) {
  TraceFolder folder;
  for (int rank = 0; rank < 3; ++rank) {
    json events = legacyEvents(10);
    for (int i = 0; i < 2; ++i) {
      events.push_back({{"name", "gloo:all_reduce"},
                        {"ph", "X"},
                        {"ts", 200 + 100 * i},
                        {"dur", 50},
                        {"tid", 1},
                        {"pid", "CPU functions"}});
    }
    json form = objectForm(10, kMono, kReal, "node1");
    form["traceEvents"] = events;
    folder.appendText("torch-rank" + std::to_string(rank) + ".json", form.dump());
  }
  Merged m = merge(folder);
  EXPECT_EQ(m.report.flowPairs, 4u);
  EXPECT_EQ(m.report.flowMissing, 0u);
  std::vector<json> starts = m.named("torch #1");
  ASSERT_EQ(starts.size(), 4u);  // a start towards each other rank, and their ends
  EXPECT_EQ(starts[0]["ph"], "s");
  // A nanosecond inside its all_reduce, to which viewers bind it.
  EXPECT_DOUBLE_EQ(starts[0]["ts"].get<double>(),
                   m.named("gloo:all_reduce")[1]["ts"].get<double>() + 0.001);
}

TEST(TorchMergeTest, TheObjectFormOnAnotherHostIsPlacedByRealTime) {
  TraceFolder folder;
  folder.appendText("torch-rank0.json", objectForm(10, kMono, kReal, "node1").dump());
  folder.appendText("torch-rank1.json", objectForm(10, 55, kReal + 1000, "node2").dump());
  Merged m = merge(folder);
  std::vector<json> mul = m.named("aten::mul");
  EXPECT_EQ(mul[1]["ts"].get<double>() - mul[0]["ts"].get<double>(), 1000.0);
  EXPECT_THAT(m.report.notes,
              Contains("placed by their hosts' real-time clocks (no clock offset was measured "
                       "for them): torch rank 1"));
}

TEST(TorchMergeTest, TheObjectFormJoinsTheRanksProcessOnItsClock) {
  TraceFolder folder;
  folder.append("rank0.jsonl", {workerHeader(0, "node1", kMono, kReal), span("step", kMono, 500)});
  folder.appendText("torch-rank0.json", objectForm(10, kMono + 200, kReal, "node1").dump());
  Merged m = merge(folder);
  EXPECT_EQ(m.named("aten::ones")[0]["ts"], 210.0);
  EXPECT_EQ(m.named("aten::ones")[0]["pid"], m.named("step")[0]["pid"]);
  EXPECT_EQ(m.trace["otherData"]["clocks"]["torch rank 0"],
            "the clock of its host node1 (rank 0's host: the reference)");
}

TEST(TorchMergeTest, ABareListIsAnchoredAtItsWorkerStartedEvent) {
  TraceFolder folder;
  folder.append("agent0.jsonl", {agentHeader(0, "node1", kMono, kReal),
                                 workerStarted(0, kMono + 50), workerStarted(1, kMono + 80)});
  folder.appendText("torch-rank1.json", legacyEvents(10).dump());
  Merged m = merge(folder);
  EXPECT_EQ(m.named("aten::ones")[0]["ts"], 40.0);  // 80 + 10, from the first start
  EXPECT_EQ(m.named("aten::ones")[0]["pid"], 2);
  EXPECT_EQ(m.processName(2), "rank 1 (node1)");
  EXPECT_THAT(m.report.notes,
              Contains(folder.file("torch-rank1.json") +
                       ": no distrunClockStartUs (a bare export): its profiler's start is put at "
                       "rank 1's \"worker_started\" launcher event, an estimate "
                       "(docs/observability.md, \"Python jobs\")"));
}

TEST(TorchMergeTest, ABareListAloneStartsTheJob) {
  TraceFolder folder;
  json events = legacyEvents(238);
  events.push_back(
      {{"name", "mark"}, {"ph", "I"}, {"ts", 300}, {"tid", 2}, {"pid", "CPU functions"}});
  events.push_back({{"name", "flow"}, {"ph", "s"}, {"id", 1}, {"ts", 300}, {"tid", 1}});
  folder.appendText("torch-rank0.json", events.dump());
  Merged m = merge(folder);
  EXPECT_EQ(m.named("aten::ones")[0]["ts"], 0.0);
  EXPECT_EQ(m.named("mark")[0]["ph"], "i");
  EXPECT_EQ(m.threadName(m.named("mark")[0]), "torch (thread 2)");
  EXPECT_TRUE(m.named("flow").empty());
  EXPECT_THAT(m.report.notes, Contains(HasSubstr("its profiler's start is put at the job's first "
                                                 "event")));
  EXPECT_THAT(m.report.notes, Contains(folder.file("torch-rank0.json") +
                                       ": left out 1 events of phases other than X, i and C"));
  EXPECT_EQ(m.processName(1), "rank 0");
}

struct BadExport {
  std::string text;
  std::string message;  // after "FOLDER/torch-rank0.json: "
};

std::ostream& operator<<(std::ostream& os, const BadExport& b) { return os << b.text; }

class BadExportTest : public ::testing::TestWithParam<BadExport> {};

TEST_P(BadExportTest, IsRefusedNamingTheFile) {
  TraceFolder folder;
  folder.appendText("torch-rank0.json", GetParam().text);
  std::ostringstream out;
  try {
    mergeTraces(folder.path(), out);
    FAIL() << "merged";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), folder.file("torch-rank0.json") + ": " + GetParam().message);
  }
}

constexpr const char* kExpected =
    ": expected PyTorch's export_chrome_trace output (a list of events) or {\"traceEvents\": "
    "[...], \"distrunClockStartUs\": ..., \"distrunRealtimeStartUs\": ...}";

const BadExport kBadExports[] = {
    {R"([{"name":"a","ph":"X","ts":1,"dur":2},)",
     std::string("not whole JSON (byte 39)") + kExpected},
    {"", std::string("not whole JSON (byte 1)") + kExpected},
    {R"([{"name":"a","ph":"X","ts":1E400,"dur":1}])",
     std::string("a number beyond a double's range") + kExpected},
    {"42", std::string("a JSON number") + kExpected},
    {R"([{"name":"a","ph":"X","ts":1}])",
     std::string("event 1: \"dur\" is not a number >= 0") + kExpected},
    {R"([{"name":"a","ph":"X","ts":1,"dur":1}, 7])",
     std::string("event 2 is a JSON number") + kExpected},
    {R"({"distrunClockStartUs":1})", std::string("no \"traceEvents\" list") + kExpected},
    {R"({"traceEvents":[],"distrunClockStartUs":"now"})",
     "\"distrunClockStartUs\" is not a number: expected microseconds"},
};
INSTANTIATE_TEST_SUITE_P(Exports, BadExportTest, ::testing::ValuesIn(kBadExports));

}  // namespace
}  // namespace distrun::trace_merge
