#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/doctor/checks.h"
#include "distrun/doctor/report_format.h"

namespace distrun::doctor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string table(const DoctorReport& report) {
  std::ostringstream out;
  writeTable(out, report);
  return out.str();
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The line that starts with `start`; "" when none does.
std::string lineStarting(const std::string& text, const std::string& start) {
  for (const std::string& line : linesOf(text)) {
    if (line.rfind(start, 0) == 0) return line;
  }
  return "";
}

void expectOneScreen(const std::string& text) {
  std::vector<std::string> lines = linesOf(text);
  EXPECT_LT(lines.size(), 50u) << text;
  for (const std::string& line : lines) EXPECT_LE(line.size(), 100u) << line;
}

const std::string kTmpdirFull = "$TMPDIR /tmp/x has 0 B free; at least 1.0 GiB wanted";
const std::string kTmpdirFix = "export TMPDIR=/scratch/$USER/tmp (a folder with room)";

// Three nodes and four checks: the GPU check skips on these CPU nodes.
DoctorReport healthyReport() {
  DoctorReport report;
  report.checks = {"scheduler", "tmpdir", "gpu", "answer"};
  for (const char* name : {"node1", "node2", "node3"}) {
    report.nodes.push_back(
        {name,
         {ok("scheduler", "3 nodes, 1 task each"), ok("tmpdir", "$TMPDIR /tmp has 20.0 GiB free"),
          skip("gpu", "no GPU on this node"), ok("answer", "reported")}});
  }
  return report;
}

// healthyReport with node2's $TMPDIR full, node3's interface missing
// (a warning) and a fourth node that never answered.
DoctorReport failingReport() {
  DoctorReport report = healthyReport();
  report.checks.insert(report.checks.begin() + 2, "network");
  *report.nodes[1].find("tmpdir") = fail("tmpdir", kTmpdirFull, kTmpdirFix);
  report.nodes[0].results.push_back(ok("network", "hsn0 is up"));
  report.nodes[1].results.push_back(ok("network", "hsn0 is up"));
  report.nodes[2].results.push_back(
      warn("network", "NCCL_SOCKET_IFNAME is unset; NCCL may pick a slow interface",
           "export NCCL_SOCKET_IFNAME=hsn0"));
  report.nodes.push_back({"node4",
                          {fail("answer", "did not report within 60 s",
                                "look at the node's slurmd log; rerun without it (--exclude)")}});
  return report;
}

TEST(ReportTableTest, HealthyReportSaysAllPassedAndWhySomethingSkipped) {
  EXPECT_EQ(table(healthyReport()),
            "distrun doctor: 3 nodes (node[1-3]), 4 checks: all passed\n"
            "scheduler  ok node[1-3]\n"
            "tmpdir     ok node[1-3]\n"
            "gpu        skip node[1-3]\n"
            "answer     ok node[1-3]\n"
            "\n"
            "skip gpu on node[1-3]: no GPU on this node\n");
}

TEST(ReportTableTest, FailingReportNamesEachProblemItsNodesAndFix) {
  EXPECT_EQ(table(failingReport()),
            "distrun doctor: 4 nodes (node[1-4]), 5 checks: 2 failed, 1 warning\n"
            "scheduler  ok node[1-3]\n"
            "tmpdir     ok node[1,3]  fail node2\n"
            "network    ok node[1-2]  warn node3\n"
            "gpu        skip node[1-3]\n"
            "answer     ok node[1-3]  fail node4\n"
            "\n"
            "fail tmpdir on node2: $TMPDIR /tmp/x has 0 B free; at least 1.0 GiB wanted\n"
            "  fix: export TMPDIR=/scratch/$USER/tmp (a folder with room)\n"
            "fail answer on node4: did not report within 60 s\n"
            "  fix: look at the node's slurmd log; rerun without it (--exclude)\n"
            "warn network on node3: NCCL_SOCKET_IFNAME is unset; NCCL may pick a slow interface\n"
            "  fix: export NCCL_SOCKET_IFNAME=hsn0\n"
            "\n"
            "skip gpu on node[1-3]: no GPU on this node\n");
}

TEST(ReportTableTest, WarningsAloneAreCountedAsWarnings) {
  DoctorReport report = healthyReport();
  *report.nodes[0].find("tmpdir") = warn("tmpdir", "$TMPDIR /tmp has 2.0 GiB free", "more");
  *report.nodes[1].find("scheduler") = warn("scheduler", "odd", "fix it");
  EXPECT_EQ(linesOf(table(report))[0],
            "distrun doctor: 3 nodes (node[1-3]), 4 checks: 0 failed, 2 warnings");
}

TEST(ReportTableTest, AnEmptyReportSaysSo) {
  EXPECT_EQ(table(DoctorReport{}), "distrun doctor: 0 nodes, 0 checks: all passed\n");
}

TEST(ReportTableTest, ACheckNoNodeRanSaysNoResults) {
  DoctorReport report = healthyReport();
  report.checks.push_back("matmul");
  EXPECT_EQ(lineStarting(table(report), "matmul"), "matmul     no results");
}

TEST(ReportTableTest, AResultOfACheckTheReportDoesNotListStillPrints) {
  DoctorReport report = healthyReport();
  report.nodes[2].results.push_back(fail("clock", "7 ms behind node1", "run chronyc"));
  std::string text = table(report);
  EXPECT_EQ(lineStarting(text, "clock"), "clock      fail node3");
  EXPECT_THAT(text, HasSubstr("fail clock on node3: 7 ms behind node1\n  fix: run chronyc\n"));
}

TEST(ReportTableTest, LongDetailsWrapAtBlanksWithinOneHundredColumns) {
  DoctorReport report = healthyReport();
  std::string detail;
  for (int i = 0; i < 30; ++i) detail += "word" + std::to_string(i) + " ";
  *report.nodes[0].find("tmpdir") = fail("tmpdir", detail, "a\nfix\twith control characters");
  std::string text = table(report);
  expectOneScreen(text);
  EXPECT_THAT(text, HasSubstr("fail tmpdir on node1: word0 word1"));
  EXPECT_THAT(text, HasSubstr("\n    word"));
  EXPECT_THAT(text, HasSubstr("  fix: a fix with control characters\n"));
}

// A check whose nodes in one state fold into a list too long for a row.
TEST(ReportTableTest, LongNodeListsAreCutWithTheirCount) {
  DoctorReport report;
  report.checks = {"tmpdir"};
  for (int i = 1; i <= 100; ++i) {
    std::string name = "nid" + std::to_string(1000 + i);
    report.nodes.push_back(
        {name, {i % 2 == 0 ? fail("tmpdir", "full", "clean") : ok("tmpdir", "")}});
  }
  std::string text = table(report);
  EXPECT_EQ(lineStarting(text, "tmpdir"),
            "tmpdir  ok 50 nodes  fail nid[1002,1004,1006,1008,1010,1012,1014,...] (50 nodes)");
  EXPECT_EQ(lineStarting(text, "fail tmpdir"),
            "fail tmpdir on nid[1002,1004,1006,1008,1010,1012,1014,...] (50 nodes): full");
}

// The row's lists shrink until the row fits, down to their counts: four
// states of 250 scattered nodes each.
TEST(ReportTableTest, ARowWithEveryStateStillFitsOneHundredColumns) {
  DoctorReport report;
  report.checks = {"snapshot-dir"};
  for (int i = 1; i <= 1000; ++i) {
    std::string name = "nid" + std::to_string(100000 + i);
    CheckResult r = std::vector<CheckResult>{ok("snapshot-dir", ""), warn("snapshot-dir", "w", "f"),
                                             fail("snapshot-dir", "f", "f"),
                                             skip("snapshot-dir", "s")}[static_cast<size_t>(i % 4)];
    report.nodes.push_back({name, {r}});
  }
  std::string row = lineStarting(table(report), "snapshot-dir");
  EXPECT_EQ(row, "snapshot-dir  ok 250 nodes  warn 250 nodes  fail 250 nodes  skip 250 nodes");
}

// A check whose nodes each fail in their own words (clock skews).
DoctorReport skewedClocks(int nodes) {
  DoctorReport report;
  report.checks = {"clock"};
  for (int i = 1; i <= nodes; ++i) {
    report.nodes.push_back({"node" + std::to_string(i),
                            {fail("clock", std::to_string(100 + i) + " ms behind node0",
                                  "start chronyd on the node")}});
  }
  return report;
}

TEST(ReportTableTest, ACheckWithManyDetailsShowsThreeAndCountsTheRest) {
  std::string text = table(skewedClocks(7));
  EXPECT_THAT(text, HasSubstr("fail clock on node1: 101 ms behind node0\n"
                              "  fix: start chronyd on the node\n"
                              "fail clock on node2: 102 ms behind node0\n"
                              "  fix: start chronyd on the node\n"
                              "fail clock on node3: 103 ms behind node0\n"
                              "  fix: start chronyd on the node\n"
                              "fail clock: ... and 4 more nodes with other details "
                              "(--format json lists them)\n"));
  EXPECT_THAT(text, Not(HasSubstr("node4:")));
}

TEST(ReportTableTest, TheDetailMostNodesShareComesFirst) {
  DoctorReport report = skewedClocks(4);
  *report.nodes[3].find("clock") =
      fail("clock", "101 ms behind node0", "start chronyd on the node");
  std::string text = table(report);
  EXPECT_THAT(text, HasSubstr("\nfail clock on node[1,4]: 101 ms behind node0\n"));
  EXPECT_LT(text.find("node[1,4]: 101"), text.find("node2: 102"));
}

// Every check failing on its own nodes in several ways: more than a screen
// of problems, so the table says how many more there are.
TEST(ReportTableTest, TooManyDistinctProblemsAreCountedNotPrinted) {
  DoctorReport report;
  report.checks = allCheckNames();
  for (int i = 1; i <= 8; ++i) {
    NodeReport node{"node" + std::to_string(i), {}};
    for (const std::string& check : report.checks) {
      node.results.push_back(fail(check, "broken in way " + std::to_string(i % 2), "mend it"));
    }
    report.nodes.push_back(node);
  }
  std::string text = table(report);
  expectOneScreen(text);
  EXPECT_THAT(text, HasSubstr("distrun doctor: 8 nodes (node[1-8]), 18 checks: 18 failed, "
                              "0 warnings\n"));
  EXPECT_THAT(text, HasSubstr("\n... and 25 more distinct failures and warnings "
                              "(--format json lists them)\n"));
}

TEST(ReportTableTest, SkipReasonsBeyondTheScreenAreCounted) {
  DoctorReport report;
  for (int i = 0; i < 60; ++i) {
    report.nodes.push_back(
        {"n" + std::to_string(i), {skip("gpu", "reason " + std::to_string(i / 3))}});
  }
  std::string text = table(report);
  expectOneScreen(text);
  EXPECT_THAT(text, HasSubstr("skip gpu on n[0-2]: reason 0\n"));
  EXPECT_THAT(text, HasSubstr("skip gpu: ... and 51 more nodes with other details"));
}

// 1,000 nodes, every check, and a few distinct problems: some on scattered
// nodes, one check with a different skew on each of its nodes, one node
// that never answered, and the GPU check skipped on every node.
DoctorReport thousandNodes() {
  DoctorReport report;
  report.checks = allCheckNames();
  for (int i = 1; i <= 1000; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "nid%06d", i);
    NodeReport node{name, {}};
    for (const std::string& check : report.checks) {
      node.results.push_back(check == "gpu" ? skip(check, "no GPU on this node") : ok(check, ""));
    }
    report.nodes.push_back(node);
  }
  auto set = [&](int i, CheckResult r) {
    *report.nodes[static_cast<size_t>(i - 1)].find(r.check) = r;
  };
  for (int i : {7, 500, 993}) set(i, fail("tmpdir", kTmpdirFull, kTmpdirFix));
  for (int i = 100; i <= 103; ++i) set(i, fail("network", "hsn0 does not exist", "unset it"));
  for (int i = 200; i < 300; i += 2) set(i, warn("limits", "memlock is 64 KiB", "ulimit -l"));
  for (int i = 50; i <= 1000; i += 50) {
    set(i, fail("clock", std::to_string(i) + " ms behind nid000001", "start chronyd"));
  }
  set(42, fail("straggler", "matmul 80 ms; the median is 40 ms", "look for a busy process"));
  report.nodes[776] = {"nid000777", {fail("answer", "did not report within 60 s", "see slurmd")}};
  return report;
}

TEST(ReportTableTest, AThousandNodesWithAFewProblemsFitOneScreen) {
  std::string text = table(thousandNodes());
  expectOneScreen(text);
  EXPECT_EQ(linesOf(text)[0],
            "distrun doctor: 1000 nodes (nid[000001-001000]), 18 checks: 5 failed, 1 warning");
  EXPECT_EQ(lineStarting(text, "tmpdir"),
            "tmpdir         ok nid[000001-000006,000008-000499,...] (996 nodes)  "
            "fail nid[000007,000500,000993]");
  EXPECT_EQ(lineStarting(text, "gpu"), "gpu            skip nid[000001-000776,000778-001000]");
  EXPECT_THAT(text, HasSubstr("fail tmpdir on nid[000007,000500,000993]: " + kTmpdirFull));
  EXPECT_THAT(text, HasSubstr("fail network on nid[000100-000103]: hsn0 does not exist"));
  EXPECT_THAT(text, HasSubstr("fail answer on nid000777: did not report within 60 s"));
  EXPECT_THAT(text, HasSubstr("fail straggler on nid000042: matmul 80 ms"));
  EXPECT_THAT(text, HasSubstr("fail clock on nid000050: 50 ms behind nid000001"));
  EXPECT_THAT(text, HasSubstr("fail clock: ... and 17 more nodes with other details"));
  EXPECT_THAT(text, HasSubstr("warn limits on nid[000200,000202,000204,000206,000208,...] "
                              "(50 nodes): memlock is 64 KiB"));
  EXPECT_THAT(text, HasSubstr("skip gpu on nid[000001-000776,000778-001000]: no GPU on this node"));
}

TEST(ReportTableTest, WriteReportPicksTheFormat) {
  std::ostringstream tableOut, jsonOut, nhcOut;
  writeReport(tableOut, failingReport(), "table");
  writeReport(jsonOut, failingReport(), "json");
  writeReport(nhcOut, failingReport(), "nhc");
  EXPECT_EQ(tableOut.str(), table(failingReport()));
  EXPECT_EQ(jsonOut.str().substr(0, 1), "{");
  EXPECT_EQ(nhcOut.str().substr(0, 6), "ERROR:");
}

TEST(ReportTableTest, AnUnknownFormatIsAUsageError) {
  std::ostringstream out;
  try {
    writeReport(out, failingReport(), "yaml");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--format yaml: expected table, json or nhc");
    EXPECT_EQ(e.exitCode(), ExitCode::kUsage);
  }
  EXPECT_EQ(out.str(), "");
}

// The bus bandwidth is what users run the doctor for: shown under the rows
// when every node that passed measured the same.
TEST(ReportTableTest, TheAllreducesFigureFollowsTheRows) {
  DoctorReport report = healthyReport();
  report.checks.push_back("allreduce");
  for (NodeReport& node : report.nodes) {
    node.results.push_back(ok("allreduce", "1.23 GB/s bus bandwidth, 64 MiB among 3 nodes"));
  }
  const std::string text = table(report);
  EXPECT_THAT(text, HasSubstr("allreduce  ok node[1-3]\n\n"
                              "ok allreduce on node[1-3]: 1.23 GB/s bus bandwidth, 64 MiB among 3 "
                              "nodes\n"));
  report.nodes[2].find("allreduce")->detail = "another figure";
  EXPECT_THAT(table(report), Not(HasSubstr("ok allreduce on")));
}

}  // namespace
}  // namespace distrun::doctor
