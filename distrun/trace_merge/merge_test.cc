// The merge of a trace folder (merge.h): processes and threads, clock
// alignment, flows, restarts, launchers, and the realtime fallback.
#include "distrun/trace_merge/merge.h"

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/trace_merge/trace_test_folder.h"

namespace distrun::trace_merge {
namespace {

using nlohmann::json;
using testing::agentHeader;
using testing::allreduce;
using testing::clockLine;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kMono;
using testing::kReal;
using testing::merge;
using testing::Merged;
using testing::span;
using testing::TraceFolder;
using testing::workerHeader;
using testing::workerStarted;

// Two hosts whose monotonic clocks differ by `skewUs` (rank 0's = rank 1's
// + skew) and whose real-time clocks are 2 s apart besides: each rank runs
// `collectives` allreduces, starting at the same true instants.
void writeTwoRanks(const TraceFolder& folder, double skewUs, double measuredUs, int collectives,
                   bool measured = true) {
  const double mono1 = kMono - skewUs;
  folder.append("rank0.jsonl", {workerHeader(0, "node1", kMono, kReal), clockLine(0, 0)});
  folder.append("rank1.jsonl", {workerHeader(1, "node2", mono1, kReal + 2'000'000.0)});
  if (measured) folder.append("rank1.jsonl", {clockLine(measuredUs, 10)});
  for (int seq = 0; seq < collectives; ++seq) {
    const double at = 500.0 + 1000.0 * seq;
    folder.append("rank0.jsonl",
                  {span("forward", kMono + at - 400, 300), allreduce(0, seq, kMono + at, 80)});
    folder.append("rank1.jsonl",
                  {span("forward", mono1 + at - 400, 300), allreduce(0, seq, mono1 + at, 80)});
  }
}

TEST(MergeTest, TwoRanksWithAnInjectedOffsetAlignWithinTheMeasurementError) {
  TraceFolder folder;
  // Rank 1's clock is 5 s behind; the measurement is 3 us off.
  writeTwoRanks(folder, 5'000'000.0, 5'000'003.0, 4);
  Merged m = merge(folder);
  std::vector<json> reduces = m.named("allreduce");
  ASSERT_EQ(reduces.size(), 8u);
  std::map<int64_t, std::vector<double>> bySeq;
  for (const json& e : reduces) bySeq[e["args"]["seq"]].push_back(e["ts"]);
  for (const auto& [seq, ts] : bySeq) {
    ASSERT_EQ(ts.size(), 2u);
    EXPECT_LE(std::abs(ts[0] - ts[1]), 3.0 + 1e-6) << "collective " << seq;
  }
  EXPECT_EQ(m.named("forward").front()["ts"], 0.0);  // the job's first event
  EXPECT_THAT(m.trace["otherData"]["clocks"]["rank 1"].get<std::string>(),
              HasSubstr("its measured offset 5000003.000 us to rank 0 (round trip 10.000 us)"));
  EXPECT_EQ(m.trace["otherData"]["clocks"]["rank 0"], "the reference clock");
}

TEST(MergeTest, AProcessPerRankNamedWithItsNodeAndThreadsNamed) {
  TraceFolder folder;
  writeTwoRanks(folder, 0, 0, 1);
  folder.append("rank1.jsonl", {span("next batch", kMono + 5000, 10, "data")});
  Merged m = merge(folder);
  EXPECT_EQ(m.processName(1), "rank 0 (node1)");
  EXPECT_EQ(m.processName(2), "rank 1 (node2)");
  EXPECT_EQ(m.metadata("process_sort_index").at({2, 0})["sort_index"], 1);
  EXPECT_EQ(m.threadName(m.named("forward").front()), "compute");
  EXPECT_EQ(m.threadName(m.named("allreduce").front()), "comm");
  EXPECT_EQ(m.threadName(m.named("next batch").front()), "data");
  EXPECT_EQ(m.trace["displayTimeUnit"], "ms");
  EXPECT_EQ(m.report.ranks, 2);
  EXPECT_EQ(m.report.events, 5u);
}

// Every flow of the trace: id -> (phase -> pids).
std::map<uint64_t, std::multimap<std::string, int>> flowsById(const Merged& m) {
  std::map<uint64_t, std::multimap<std::string, int>> flows;
  for (const std::string ph : {"s", "f"}) {
    for (const json& e : m.phase(ph)) flows[e["id"]].emplace(ph, e["pid"].get<int>());
  }
  return flows;
}

TEST(MergeTest, EveryCollectiveIsLinkedFromRankZeroToEachOtherRank) {
  TraceFolder folder;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string name = "rank" + std::to_string(rank) + ".jsonl";
    folder.append(name, {workerHeader(rank, "node1", kMono, kReal)});
    for (int seq = 0; seq < 5; ++seq) folder.append(name, {allreduce(0, seq, kMono + seq, 1)});
    folder.append(name, {allreduce(1, 0, kMono + 10, 1)});  // a second communicator
  }
  Merged m = merge(folder);
  auto flows = flowsById(m);
  EXPECT_EQ(flows.size(), 12u);  // 6 collectives x 2 other ranks, each id once
  for (const auto& [id, ends] : flows) {
    ASSERT_EQ(ends.size(), 2u) << id;
    EXPECT_EQ(ends.find("s")->second, 1) << "starts on rank 0";
    EXPECT_NE(ends.find("f")->second, 1) << "ends on another rank";
  }
  for (const json& f : m.phase("f")) EXPECT_EQ(f["bp"], "e");
  EXPECT_EQ(m.phase("s").front()["name"], "comm 0 #0");
  EXPECT_EQ(m.report.flowPairs, 12u);
  EXPECT_EQ(m.report.flowMissing, 0u);
  EXPECT_EQ(m.trace["otherData"]["flows"]["pairs"], 12);
}

TEST(MergeTest, CollectivesWithASideMissingAreCountedNotLinked) {
  TraceFolder folder;
  writeTwoRanks(folder, 0, 0, 2);
  folder.append("rank0.jsonl", {allreduce(0, 2, kMono + 9000, 1)});  // rank 1 died first
  folder.append("rank1.jsonl", {allreduce(0, 7, kMono + 9000, 1)});  // rank 0's is lost
  Merged m = merge(folder);
  EXPECT_EQ(m.report.flowPairs, 2u);
  EXPECT_EQ(m.report.flowMissing, 2u);
  EXPECT_EQ(m.phase("s").size(), 2u);
  EXPECT_EQ(m.phase("f").size(), 2u);
}

TEST(MergeTest, ARestartedWorkersPartsAreKeptApartInOrder) {
  TraceFolder folder;
  for (int restart = 0; restart < 2; ++restart) {
    const double mono = kMono + restart * 100'000.0;
    for (int rank = 0; rank < 2; ++rank) {
      const std::string name = "rank" + std::to_string(rank) + ".jsonl";
      folder.append(name, {workerHeader(rank, "node1", mono, kReal + restart * 100'000.0, restart),
                           span("step", mono + 10, 5), allreduce(0, 0, mono + 20, 5)});
    }
  }
  Merged m = merge(folder);
  std::vector<json> steps = m.named("step");
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(m.threadName(steps[0]), "compute");
  EXPECT_EQ(m.threadName(steps[1]), "compute (restart 1)");
  EXPECT_LT(steps[0]["ts"].get<double>(), steps[1]["ts"].get<double>());
  EXPECT_LT(m.metadata("thread_sort_index").at({1, steps[0]["tid"].get<int>()})["sort_index"],
            m.metadata("thread_sort_index").at({1, steps[1]["tid"].get<int>()})["sort_index"]);
  EXPECT_EQ(m.threadName(m.named("allreduce")[1]), "comm (restart 1)");
  // Each round's collective 0 is its own pair.
  EXPECT_EQ(m.report.flowPairs, 2u);
  std::set<std::string> names;
  for (const json& s : m.phase("s")) names.insert(s["name"]);
  EXPECT_THAT(names, ElementsAre("comm 0 #0", "comm 0 #0 (restart 1)"));
}

TEST(MergeTest, OffsetsOfARestartRoundAreToThatRoundsRankZero) {
  TraceFolder folder;
  // node2's clock is 5 s behind node1's. Round 0: rank 0 on node1. Round
  // 1 (an elastic re-formation): rank 0 on node2, rank 1 on node1, whose
  // offset is then measured to node2's clock. One true instant: 9000 us.
  const double mono2 = kMono - 5'000'000.0;
  folder.append("rank0.jsonl",
                {workerHeader(0, "node1", kMono, kReal),
                 workerHeader(0, "node2", mono2, kReal + 77, 1), span("step", mono2 + 9000, 5)});
  folder.append("rank1.jsonl",
                {workerHeader(1, "node2", mono2, kReal), clockLine(5e6, 8),
                 span("first", mono2 + 100, 1), workerHeader(1, "node1", kMono, kReal - 99, 1),
                 clockLine(-5e6, 8), span("step", kMono + 9000, 5)});
  Merged m = merge(folder);
  std::vector<json> steps = m.named("step");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0]["ts"], steps[1]["ts"]);
  EXPECT_EQ(m.threadName(steps[1]), "compute (restart 1)");
}

TEST(MergeTest, AgentsAreLauncherProcessesOnTheClockOfARankOnTheirHost) {
  TraceFolder folder;
  writeTwoRanks(folder, 5'000'000.0, 5'000'000.0, 1);
  // Agent 1 shares node2 (and its monotonic clock) with rank 1.
  const double mono1 = kMono - 5'000'000.0;
  folder.append("agent0.jsonl",
                {agentHeader(0, "node1", kMono - 200, kReal - 200), workerStarted(0, kMono - 100)});
  folder.append("agent1.jsonl", {agentHeader(1, "node2", mono1 - 200, kReal + 7'000'000.0),
                                 workerStarted(1, mono1 - 100)});
  Merged m = merge(folder);
  std::vector<json> starts = m.named("worker_started");
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0]["ts"], starts[1]["ts"]);
  EXPECT_EQ(starts[0]["ts"], 0.0);
  EXPECT_EQ(m.processName(starts[0]["pid"].get<int>()), "launcher node 0 (node1)");
  EXPECT_EQ(m.processName(starts[1]["pid"].get<int>()), "launcher node 1 (node2)");
  EXPECT_EQ(starts[0]["pid"], 3);  // after the ranks' pids 1 and 2
  EXPECT_EQ(m.metadata("process_sort_index").at({4, 0})["sort_index"], 3);
  EXPECT_EQ(m.threadName(starts[1]), "launcher");
  EXPECT_THAT(m.trace["otherData"]["clocks"]["launcher node 1"].get<std::string>(),
              HasSubstr("the clock of its host node2 (rank 1's measured offset)"));
  EXPECT_EQ(m.report.launchers, 2);
}

TEST(MergeTest, AProcessWithoutAMeasuredOffsetFallsBackToTheRealTimeClock) {
  TraceFolder folder;
  // Rank 1 measured no offset: its pair of clock readings places it. Agent
  // 2 is alone on node3.
  const double mono1 = kMono - 5'000'000.0;
  folder.append("rank0.jsonl",
                {workerHeader(0, "node1", kMono, kReal), allreduce(0, 0, kMono + 100, 10)});
  folder.append("rank1.jsonl",
                {workerHeader(1, "node2", mono1, kReal + 50), allreduce(0, 0, mono1 + 100, 10)});
  folder.append("agent2.jsonl",
                {agentHeader(2, "node3", 42, kReal + 10), workerStarted(5, 42 + 100)});
  Merged m = merge(folder);
  std::vector<json> reduces = m.named("allreduce");
  ASSERT_EQ(reduces.size(), 2u);
  EXPECT_DOUBLE_EQ(reduces[1]["ts"].get<double>() - reduces[0]["ts"].get<double>(), 50.0);
  EXPECT_THAT(m.trace["otherData"]["clocks"]["rank 1"].get<std::string>(),
              HasSubstr("the real-time clock of node2"));
  EXPECT_THAT(m.report.notes,
              ::testing::Contains(
                  "placed by their hosts' real-time clocks (no clock offset was measured for "
                  "them): rank 1, launcher node 2"));
  EXPECT_DOUBLE_EQ(m.named("worker_started")[0]["ts"].get<double>(),
                   reduces[0]["ts"].get<double>() + 10.0);
}

TEST(MergeTest, ACappedFileIsNoted) {
  TraceFolder folder;
  writeTwoRanks(folder, 0, 0, 1);
  folder.append("rank1.jsonl", {{{"trace_capped", {{"bytes", 104857600}}}}});
  Merged m = merge(folder);
  EXPECT_THAT(m.report.notes,
              ::testing::Contains(folder.file("rank1.jsonl") +
                                  ": capped at 100.0 MiB (the trace's size cap): later events "
                                  "of rank 1 were not recorded"));
  EXPECT_THAT(m.trace["otherData"]["notes"].dump(), HasSubstr("capped at 100.0 MiB"));
}

TEST(MergeTest, TimesAreRoundedToTheNanosecondAndStartAtZero) {
  TraceFolder folder;
  folder.append("rank0.jsonl", {workerHeader(0, "node1", kMono, kReal),
                                span("a", kMono + 0.1234567, 1), span("b", kMono + 2.5, 1)});
  Merged m = merge(folder);
  EXPECT_EQ(m.named("a")[0]["ts"], 0.0);
  EXPECT_EQ(m.named("b")[0]["ts"], 2.377);
}

TEST(MergeTest, ThePlainSummary) {
  MergeReport r{.output = "t/trace.json",
                .ranks = 2,
                .launchers = 1,
                .torchExports = 0,
                .events = 5230,
                .flowPairs = 96,
                .flowMissing = 0,
                .notes = {}};
  EXPECT_EQ(formatSummary(r),
            "wrote t/trace.json: 2 ranks, 1 launcher, 0 PyTorch exports, 5230 events; 96 "
            "collective pairs linked, 0 with a side missing");
  EXPECT_EQ(defaultOutputFor("traces"), "traces/trace.json");
}

}  // namespace
}  // namespace distrun::trace_merge
