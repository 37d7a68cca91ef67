// What the merge refuses, and what it repairs: each refusal one line naming
// the input (FILE:LINE) and what was expected, with its exit code.
#include <sys/stat.h>

#include <filesystem>
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
using testing::allreduce;
using ::testing::HasSubstr;
using testing::kMono;
using testing::kReal;
using testing::span;
using testing::TraceFolder;
using testing::workerHeader;

struct Refusal {
  std::string message;
  ExitCode code = ExitCode::kSuccess;
};

Refusal refusalOf(const std::string& folder) {
  std::ostringstream out;
  try {
    mergeTraces(folder, out);
  } catch (const std::exception& e) {
    EXPECT_EQ(out.str(), "") << "wrote before refusing";
    return {e.what(), exitCodeFor(e)};
  }
  ADD_FAILURE() << "merged " << folder;
  return {};
}

void writeRankZero(const TraceFolder& folder) {
  folder.append("rank0.jsonl", {workerHeader(0, "node1", kMono, kReal), span("a", kMono, 1),
                                span("b", kMono + 5, 1)});
}

TEST(MergeRepairTest, ALastLineCutShortIsDroppedWithANote) {
  TraceFolder folder;
  writeRankZero(folder);
  folder.appendText("rank0.jsonl", R"({"name":"c","ph":"X","ts":1000010.5,"du)");
  std::ostringstream out;
  MergeReport report = mergeTraces(folder.path(), out);
  EXPECT_EQ(report.events, 2u);
  EXPECT_THAT(report.notes,
              ::testing::ElementsAre(folder.file("rank0.jsonl") +
                                     ": dropped line 4, which is not whole (the process was "
                                     "killed while writing it?)"));
  json trace = json::parse(out.str());
  EXPECT_THAT(trace["otherData"]["notes"][0].get<std::string>(), HasSubstr("dropped line 4"));
}

TEST(MergeRepairTest, ALastLineOfZeroBytesIsDroppedToo) {
  TraceFolder folder;
  writeRankZero(folder);
  folder.appendText("rank0.jsonl", std::string(6, '\0'));
  std::ostringstream out;
  EXPECT_EQ(mergeTraces(folder.path(), out).notes.size(), 1u);
}

TEST(MergeRepairTest, AWholeLastLineWithoutItsNewlineIsKept) {
  TraceFolder folder;
  writeRankZero(folder);
  folder.appendText("rank0.jsonl", span("c", kMono + 9, 1).dump());
  std::ostringstream out;
  MergeReport report = mergeTraces(folder.path(), out);
  EXPECT_EQ(report.events, 3u);
  EXPECT_TRUE(report.notes.empty());
}

TEST(MergeRepairTest, AnEmptyFileIsSkippedWithANote) {
  TraceFolder folder;
  writeRankZero(folder);
  folder.appendText("rank1.jsonl", "");
  std::ostringstream out;
  MergeReport report = mergeTraces(folder.path(), out);
  EXPECT_THAT(report.notes,
              ::testing::ElementsAre(folder.file("rank1.jsonl") + ": empty, skipped"));
}

// The refusal of a folder whose rank0.jsonl has `text` as its line 4, with a
// whole line after it (so it is not a last line cut short).
Refusal refusalOfLineFour(const TraceFolder& folder, const std::string& text) {
  writeRankZero(folder);
  folder.appendText("rank0.jsonl", text + "\n");
  folder.append("rank0.jsonl", {span("d", kMono + 9, 1)});
  return refusalOf(folder.path());
}

TEST(MergeRefusalTest, AMalformedLineBeforeTheLastIsADataError) {
  TraceFolder folder;
  Refusal r = refusalOfLineFour(folder, "{\"name\":\"c\",\"ph\":\"X\",\"ts\":12,,}");
  EXPECT_EQ(r.message, folder.file("rank0.jsonl") +
                           ":4: not whole JSON (column 30): expected one JSON object per line");
  EXPECT_EQ(r.code, ExitCode::kData);
}

TEST(MergeRefusalTest, ANumberBeyondADoublesRangeIsADataError) {
  TraceFolder folder;
  Refusal r = refusalOfLineFour(folder, "{\"name\":\"c\",\"ph\":\"X\",\"ts\":1E400,\"dur\":1}");
  EXPECT_EQ(r.message, folder.file("rank0.jsonl") +
                           ":4: a number beyond a double's range: expected microseconds, counts "
                           "and ids of a trace");
  EXPECT_EQ(r.code, ExitCode::kData);
}

struct BadLine {
  json line;
  std::string message;  // after "FOLDER/rank0.jsonl:2: "
};

std::ostream& operator<<(std::ostream& os, const BadLine& b) { return os << b.line.dump(); }

class MalformedEventTest : public ::testing::TestWithParam<BadLine> {};

TEST_P(MalformedEventTest, IsRefusedNamingTheLineAndWhatWasExpected) {
  TraceFolder folder;
  folder.append("rank0.jsonl",
                {workerHeader(0, "node1", kMono, kReal), GetParam().line, span("after", kMono, 1)});
  Refusal r = refusalOf(folder.path());
  EXPECT_EQ(r.message, folder.file("rank0.jsonl") + ":2: " + GetParam().message);
  EXPECT_EQ(r.code, ExitCode::kData);
}

const BadLine kBadLines[] = {
    {json::array({1, 2}), "a JSON array where a JSON object was expected"},
    {{{"name", "x"}, {"ph", "X"}, {"ts", "soon"}, {"dur", 1}},
     "\"ts\" is a string: expected a number of microseconds"},
    {{{"name", "x"}, {"ph", "X"}, {"ts", 1}},
     "\"dur\" is missing: expected a number of microseconds"},
    {{{"name", "x"}, {"ph", "X"}, {"ts", 1}, {"dur", -2}},
     "\"dur\" is the number -2: expected a number of microseconds >= 0"},
    {{{"name", "x"}, {"ph", "B"}, {"ts", 1}}, "\"ph\" is \"B\": expected \"X\", \"i\" or \"C\""},
    {{{"ph", "i"}, {"ts", 1}}, "\"name\" is missing: expected the event's name"},
    {{{"name", "x"}, {"ph", "i"}, {"ts", 1}, {"tid", 3}},
     "\"tid\" is the number 3: expected the thread's name: compute, data, comm or launcher"},
    {{{"name", "x"}, {"ph", "C"}, {"ts", 1}, {"args", {{"bytes", "many"}}}},
     "counter \"bytes\" is not a number: expected a number"},
    {{{"hello", 1}},
     "an object with none of \"ph\", \"trace\", \"clock_offset\", \"trace_capped\": expected an "
     "event, a header, the clock line or the size cap's line"},
    {{{"clock_offset", {{"to_rank", 0}}}},
     "clock_offset: \"offset_us\" is missing: expected microseconds"},
    {{{"clock_offset", {{"to_rank", 2}, {"offset_us", 1.5}}}},
     "clock_offset: \"to_rank\" is the number 2: expected 0 (offsets are measured to rank 0)"},
    {{{"trace", "distrun"}, {"version", 2}},
     "trace format version 2, this distrun reads version 1: merge it with the distrun that "
     "recorded it"},
    {{{"trace", "distrun"}, {"version", 1}, {"process", "worker"}, {"rank", 0}},
     "\"host\" is missing: expected the host's name"},
};
INSTANTIATE_TEST_SUITE_P(Lines, MalformedEventTest, ::testing::ValuesIn(kBadLines));

TEST(MergeRefusalTest, AFileMustStartWithItsHeader) {
  TraceFolder folder;
  folder.append("rank0.jsonl", {span("a", kMono, 1)});
  Refusal r = refusalOf(folder.path());
  EXPECT_EQ(r.message, folder.file("rank0.jsonl") +
                           ":1: expected the header line first "
                           "({\"trace\":\"distrun\",\"version\":1,...})");
  EXPECT_EQ(r.code, ExitCode::kData);
}

TEST(MergeRefusalTest, AHeaderOfAnotherRankIsRefused) {
  TraceFolder folder;
  folder.append("rank1.jsonl", {workerHeader(3, "node1", kMono, kReal)});
  EXPECT_EQ(refusalOf(folder.path()).message,
            folder.file("rank1.jsonl") +
                ":1: a header of worker 3 in the file of rank 1: expected rank 1's");
}

TEST(MergeRefusalTest, AMissingFolder) {
  Refusal r = refusalOf("/nonexistent-distrun/traces");
  EXPECT_EQ(r.message,
            "trace folder /nonexistent-distrun/traces: does not exist: give the folder that "
            "distrun train --trace DIR (or DISTRUN_TRACE=DIR) wrote");
  EXPECT_EQ(r.code, ExitCode::kNoInput);
}

TEST(MergeRefusalTest, AFileForAFolder) {
  TraceFolder folder;
  writeRankZero(folder);
  Refusal r = refusalOf(folder.file("rank0.jsonl"));
  EXPECT_THAT(r.message, HasSubstr("rank0.jsonl: not a folder: give the folder"));
  EXPECT_EQ(r.code, ExitCode::kNoInput);
}

TEST(MergeRefusalTest, AFolderWithoutTraceFiles) {
  TraceFolder folder;
  folder.appendText("trace.json", "{}");
  folder.appendText("rank.jsonl", "");
  folder.appendText("rank01.jsonl", "");
  Refusal r = refusalOf(folder.path());
  EXPECT_EQ(r.message, "trace folder " + folder.path() +
                           ": no trace files in it (rank<R>.jsonl, agent<N>.jsonl, "
                           "torch-rank<R>.json): give the folder that distrun train --trace DIR "
                           "(or DISTRUN_TRACE=DIR) wrote");
  EXPECT_EQ(r.code, ExitCode::kNoInput);
}

TEST(MergeRefusalTest, AFileThatCannotBeOpened) {
  TraceFolder folder;
  writeRankZero(folder);
  std::filesystem::create_symlink("/nonexistent-distrun/rank1.jsonl", folder.file("rank1.jsonl"));
  Refusal r = refusalOf(folder.path());
  EXPECT_EQ(r.message, "cannot open " + folder.file("rank1.jsonl") + ": No such file or directory");
  EXPECT_EQ(r.code, ExitCode::kIo);
}

TEST(MergeFileTest, TheOutputIsWrittenWholeUnderItsNameAndNothingElseIsLeft) {
  TraceFolder folder;
  writeRankZero(folder);
  const std::string output = defaultOutputFor(folder.path());
  MergeReport report = mergeTraceFolder(folder.path(), output, "-o");
  EXPECT_EQ(report.output, output);
  EXPECT_EQ(testing::readJson(output)["traceEvents"].size(), 2u + 4u);  // and the metadata
  // Merged again, trace.json is not taken for an input.
  EXPECT_EQ(mergeTraceFolder(folder.path(), output, "-o").events, 2u);
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 2u) << "a temporary file was left";
}

TEST(MergeFileTest, AnOutputThatCannotBeWrittenIsRefusedBeforeReading) {
  TraceFolder folder;
  writeRankZero(folder);
  folder.appendText("rank1.jsonl", "not json\nat all\n");  // never read
  try {
    mergeTraceFolder(folder.path(), "/nonexistent-distrun/t.json", "-o");
    FAIL() << "merged";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()),
              "-o /nonexistent-distrun/t.json: the folder /nonexistent-distrun does not exist: "
              "create it, or choose another path");
  }
}

}  // namespace
}  // namespace distrun::trace_merge
