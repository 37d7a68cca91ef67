#include "distrun/plot/trace_timeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/plot/plot_testing.h"
#include "distrun/plot/timeline_figure.h"

namespace distrun::plot {
namespace {

using ::testing::ContainsRegex;
using testing::errorOf;
using ::testing::HasSubstr;

// Two ranks as a merge names them (rank 1 sorted first by its index, to
// show the index wins over the pid), compute with a nested span, comm.
const std::string kTrace = R"json({"traceEvents": [
  {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "rank 0 (node1)"}},
  {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "rank 1 (node2)"}},
  {"ph": "M", "name": "process_sort_index", "pid": 1, "args": {"sort_index": -1}},
  {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "compute"}},
  {"ph": "M", "name": "thread_name", "pid": 0, "tid": 2, "args": {"name": "comm"}},
  {"ph": "X", "name": "step", "cat": "compute", "pid": 0, "tid": 1, "ts": 1000, "dur": 5000},
  {"ph": "X", "name": "backward", "cat": "compute", "pid": 0, "tid": 1, "ts": 2000, "dur": 1500},
  {"ph": "X", "name": "allreduce", "cat": "comm", "pid": 0, "tid": 2, "ts": 3000, "dur": 2000,
   "args": {"bytes": 4096}},
  {"ph": "i", "name": "restart", "pid": 0, "tid": 1, "ts": 1500, "s": "t"},
  {"ph": "X", "name": "step", "cat": "compute", "pid": 1, "tid": "compute", "ts": 1200,
   "dur": 6000},
  {"ph": "s", "name": "flow", "id": 1, "pid": 0, "tid": 2, "ts": 3000}
]})json";

TEST(TraceTimelineTest, OneLanePerProcessAndThreadNamedByTheMetadata) {
  const Timeline t = parseTimeline("t.json", kTrace);
  EXPECT_EQ(t.lanes,
            (std::vector<std::string>{"rank 1 (node2) / tid compute", "rank 0 (node1) / compute",
                                      "rank 0 (node1) / comm"}));
  ASSERT_EQ(t.spans.size(), 4u);  // the X events only
  EXPECT_EQ(t.spans[0].lane, 0u);
  EXPECT_DOUBLE_EQ(t.spans[0].startMs, 0.2);
  EXPECT_EQ(t.spans[1].name, "step");  // the lane's spans by start
  EXPECT_EQ(t.spans[2].name, "backward");
  EXPECT_DOUBLE_EQ(t.spans[2].startMs, 1.0);
  EXPECT_DOUBLE_EQ(t.spans[2].endMs, 2.5);
  EXPECT_EQ(t.spans[3].category, "comm");
  EXPECT_DOUBLE_EQ(t.endMs, 6.2);
}

TEST(TraceTimelineTest, ABareArrayOfEventsIsATraceToo) {
  const Timeline t =
      parseTimeline("a.json", R"json([{"ph": "X", "name": "x", "pid": 7, "tid": 8, "ts": 5,
                                   "dur": 1}])json");
  EXPECT_EQ(t.lanes, std::vector<std::string>{"pid 7 / tid 8"});
}

TEST(TraceTimelineTest, AWindowCutsSpansAndDropsEmptyLanes) {
  const Timeline t = window(parseTimeline("t.json", kTrace), 1.5, 3.0);
  EXPECT_EQ(t.lanes,
            (std::vector<std::string>{"rank 1 (node2) / tid compute", "rank 0 (node1) / compute",
                                      "rank 0 (node1) / comm"}));
  const Timeline late = window(parseTimeline("t.json", kTrace), 5.5, 6.0);
  EXPECT_EQ(late.lanes, std::vector<std::string>{"rank 1 (node2) / tid compute"});
  ASSERT_EQ(late.spans.size(), 1u);
  EXPECT_EQ(late.spans[0].lane, 0u);
  EXPECT_DOUBLE_EQ(late.spans[0].startMs, 5.5);
  EXPECT_DOUBLE_EQ(late.spans[0].endMs, 6.0);
}

TEST(TraceTimelineTest, AWindowWithoutSpansHasNoLanes) {
  const Timeline t = window(parseTimeline("t.json", kTrace), 100, 200);
  EXPECT_TRUE(t.lanes.empty());
  EXPECT_TRUE(t.spans.empty());
}

TEST(TraceTimelineTest, ATraceOfAnotherShapeIsADataErrorNamingIt) {
  const std::string notTrace =
      "trace t.json: expected a Chrome trace, a JSON object with a \"traceEvents\" array (what "
      "`distrun trace merge` writes)";
  EXPECT_EQ(errorOf([] { parseTimeline("t.json", R"json({"events": []})json"); }),
            std::make_pair(notTrace, ExitCode::kData));
  EXPECT_EQ(errorOf([] { parseTimeline("t.json", "42"); }),
            std::make_pair(notTrace, ExitCode::kData));
  EXPECT_EQ(errorOf([] { parseTimeline("t.json", "{\"traceEvents\": [1, 2"); }),
            std::make_pair(std::string("trace t.json: expected a Chrome trace (JSON): parse "
                                       "error at line 1, column 22: syntax error while parsing "
                                       "array - unexpected end of input; expected ']'"),
                           ExitCode::kData));
  EXPECT_EQ(
      errorOf([] { parseTimeline("t.json", R"json({"traceEvents": [{"ph": "i"}, 3]})json"); }),
      std::make_pair(std::string("trace t.json: event 1: expected a JSON object, found "
                                 "number"),
                     ExitCode::kData));
}

TEST(TraceTimelineTest, ASpanWithoutItsTimesIsADataErrorNamingTheEvent) {
  const std::string expected =
      "trace t.json: event 1: expected a complete event (\"ph\":\"X\") with numbers \"ts\" and "
      "\"dur\" (microseconds, dur at least 0): ";
  const auto errorFor = [](const std::string& span) {
    return errorOf([&span] {
      parseTimeline("t.json", R"json({"traceEvents": [{"ph": "M"}, )json" + span + "]}");
    });
  };
  EXPECT_EQ(errorFor(R"json({"ph": "X", "ts": 1})json"),
            std::make_pair(expected + "it has no \"dur\"", ExitCode::kData));
  EXPECT_EQ(errorFor(R"json({"ph": "X", "ts": "1", "dur": 2})json"),
            std::make_pair(expected + "its \"ts\" is \"1\"", ExitCode::kData));
  EXPECT_EQ(errorFor(R"json({"ph": "X", "ts": 1, "dur": -2})json"),
            std::make_pair(expected + "its \"dur\" is -2", ExitCode::kData));
}

TEST(TraceTimelineTest, ATraceWithoutSpansIsADataError) {
  EXPECT_EQ(errorOf([] { parseTimeline("t.json", R"json({"traceEvents": [{"ph": "i"}]})json"); }),
            std::make_pair(std::string("trace t.json: no complete event (\"ph\":\"X\") to draw: "
                                       "expected spans with ts and dur"),
                           ExitCode::kData));
}

TEST(TraceTimelineTest, AMissingTraceIsNoInput) {
  EXPECT_EQ(errorOf([] { readTimeline("/nonexistent-distrun/t.json"); }),
            std::make_pair(std::string("trace /nonexistent-distrun/t.json: cannot open: No such "
                                       "file or directory: give a Chrome trace (`distrun trace "
                                       "merge -o FILE` writes one)"),
                           ExitCode::kNoInput));
}

TEST(TimelineFigureTest, CategoriesKeepTheirColours) {
  const std::vector<std::string> categories = {"comm", "compute", "gpu", "zeta"};
  EXPECT_EQ(categoryColour("compute", categories), "#4E79A7");
  EXPECT_EQ(categoryColour("comm", categories), "#F28E2B");
  EXPECT_EQ(categoryColour("gpu", categories), "#76B7B2");
  EXPECT_EQ(categoryColour("zeta", categories), "#EDC948");
}

TEST(TimelineFigureTest, LanesAreLabelledAndNestedSpansLieBelowTheirParent) {
  const Timeline t = parseTimeline("t.json", kTrace);
  const std::string script =
      timelineFigureScript(t, 0, t.endMs, ImageFormat::kPng, timelineSize(t.lanes.size()));
  EXPECT_THAT(script, HasSubstr("set ytics ('rank 1 (node2) / tid compute' 0, 'rank 0 (node1) / "
                                "compute' 1, 'rank 0 (node1) / comm' 2) nomirror"));
  // Lane 1 has two rows: step in the upper, backward in the lower (each a
  // pixel short of its end, a gap before the next).
  EXPECT_THAT(script, ContainsRegex("\n2\\.4[0-9]+ 1 0 4\\.9[0-9]+ 0\\.58 0\\.958 5142951\n"));
  EXPECT_THAT(script, ContainsRegex("\n1\\.7[0-9]+ 1 1 2\\.4[0-9]+ 1 1\\.378 5142951\n"));
  EXPECT_THAT(script, HasSubstr("\"backward\""));
  EXPECT_THAT(script, HasSubstr("keyentry with boxes fc rgb '#F28E2B' title 'comm'"));
  EXPECT_EQ(timelineSize(10).height, 170 + 10 * 34);
  EXPECT_EQ(timelineSize(1).height, 400);
}

}  // namespace
}  // namespace distrun::plot
