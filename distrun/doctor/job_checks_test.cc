#include "distrun/doctor/job_checks.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

NodeReport node(const std::string& name, std::vector<CheckResult> results) {
  return {name, std::move(results)};
}

CheckResult matmul(double ms) {
  CheckResult r = ok("matmul", "");
  r.values["matmul_ms"] = ms;
  return r;
}

CheckResult python(const std::string& torch) {
  CheckResult r = ok("python", "");
  r.facts["torch_version"] = torch;
  return r;
}

DoctorReport timed(const std::vector<double>& ms) {
  DoctorReport report;
  report.checks = {"matmul"};
  for (size_t i = 0; i < ms.size(); ++i) {
    report.nodes.push_back(node(fmt::format("n{}", i + 1), {matmul(ms[i])}));
  }
  return report;
}

const CheckResult& resultOf(const DoctorReport& report, size_t node, const std::string& check) {
  const CheckResult* r = report.nodes.at(node).find(check);
  EXPECT_NE(r, nullptr);
  return *r;
}

constexpr const char* kStragglerFix =
    "something else runs on this node's cores (top, ps), or the node is throttled: report it "
    "to the admins or exclude it (sbatch --exclude=NODE)";

// --- straggler ---

TEST(StragglerTest, ANodeSlowerThanTheMedianByMoreThanTheMarginFails) {
  DoctorReport report = timed({41.0, 98.1, 40.5});
  flagStragglers(report, 0.25);
  EXPECT_EQ(report.checks, (std::vector<std::string>{"matmul", "straggler"}));
  const CheckResult& slow = resultOf(report, 1, "straggler");
  EXPECT_EQ(slow.state, CheckState::kFail);
  EXPECT_EQ(slow.detail, "matrix product 98.1 ms, 2.4x the median 41.0 ms of 3 nodes");
  EXPECT_EQ(slow.fix, kStragglerFix);
  EXPECT_EQ(slow.values.at("matmul_ms"), 98.1);
  EXPECT_EQ(slow.values.at("median_ms"), 41.0);
  for (size_t i : {0u, 2u}) {
    EXPECT_EQ(resultOf(report, i, "straggler").state, CheckState::kOk);
    EXPECT_EQ(resultOf(report, i, "straggler").detail,
              "within 25 % of the median 41.0 ms of 3 nodes");
  }
}

TEST(StragglerTest, TwoNodesAreComparedWithTheirMean) {
  DoctorReport report = timed({40.0, 80.0});  // median 60: 80 is 1.33x
  flagStragglers(report, 0.25);
  EXPECT_EQ(resultOf(report, 0, "straggler").state, CheckState::kOk);
  EXPECT_EQ(resultOf(report, 1, "straggler").detail,
            "matrix product 80.0 ms, 1.3x the median 60.0 ms of 2 nodes");
  report = timed({40.0, 45.0});
  flagStragglers(report, 0.25);
  EXPECT_EQ(resultOf(report, 1, "straggler").state, CheckState::kOk);
}

TEST(StragglerTest, WithinTheMarginIsFine) {
  DoctorReport report = timed({40.0, 50.0, 40.0});  // 50 is exactly 1.25x
  flagStragglers(report, 0.25);
  EXPECT_EQ(resultOf(report, 1, "straggler").state, CheckState::kOk);
  flagStragglers(report, 0.2);  // again, with a tighter margin: replaced, not added
  EXPECT_EQ(resultOf(report, 1, "straggler").state, CheckState::kFail);
  EXPECT_EQ(report.nodes[1].results.size(), 2u);
  EXPECT_EQ(report.checks.size(), 2u);
}

TEST(StragglerTest, AThousandNodesWithThreeSlowOnes) {
  std::vector<double> ms(1000, 40.0);
  for (size_t i = 0; i < ms.size(); ++i) ms[i] += static_cast<double>(i % 5);  // 40..44
  ms[17] = 60.0;
  ms[500] = 90.0;
  ms[999] = 55.1;
  DoctorReport report = timed(ms);
  flagStragglers(report, 0.25);
  std::vector<size_t> failed;
  for (size_t i = 0; i < report.nodes.size(); ++i) {
    if (resultOf(report, i, "straggler").state == CheckState::kFail) failed.push_back(i);
  }
  EXPECT_EQ(failed, (std::vector<size_t>{17, 500, 999}));
  EXPECT_EQ(resultOf(report, 500, "straggler").detail,
            "matrix product 90.0 ms, 2.1x the median 42.0 ms of 1000 nodes");
  // The healthy nodes share one detail, so the table folds them into one row.
  EXPECT_EQ(resultOf(report, 0, "straggler").detail, resultOf(report, 3, "straggler").detail);
}

TEST(StragglerTest, OneNodeHasNoneToCompare) {
  DoctorReport report = timed({41.0});
  flagStragglers(report, 0.25);
  EXPECT_EQ(resultOf(report, 0, "straggler").state, CheckState::kSkip);
  EXPECT_EQ(resultOf(report, 0, "straggler").detail,
            "one node timed the matrix product: none to compare");
}

TEST(StragglerTest, NodesThatDidNotMeasureAreSkippedWithAReason) {
  DoctorReport report = timed({41.0, 42.0});
  report.nodes.push_back(node("n3", {fail("answer", "did not answer within 60 s", "")}));
  flagStragglers(report, 0.25);
  EXPECT_EQ(resultOf(report, 2, "straggler").state, CheckState::kSkip);
  EXPECT_EQ(resultOf(report, 2, "straggler").detail,
            "this node did not time the matrix product (see matmul)");
  EXPECT_EQ(resultOf(report, 0, "straggler").detail,
            "within 25 % of the median 41.5 ms of 2 nodes");

  DoctorReport none;
  none.nodes = {node("n1", {}), node("n2", {})};
  flagStragglers(none, 0.25);
  EXPECT_EQ(resultOf(none, 1, "straggler").detail, "no node timed the matrix product (matmul)");
}

// --- torch-version ---

DoctorReport versions(const std::vector<std::string>& torch) {
  DoctorReport report;
  for (size_t i = 0; i < torch.size(); ++i) {
    std::vector<CheckResult> results;
    if (!torch[i].empty()) results.push_back(python(torch[i]));
    report.nodes.push_back(node(fmt::format("n{}", i + 1), results));
  }
  return report;
}

TEST(TorchVersionTest, TheSameVersionEverywhereIsFine) {
  DoctorReport report = versions({"2.1.2", "2.1.2", "2.1.2"});
  compareTorchVersions(report);
  EXPECT_EQ(report.checks, std::vector<std::string>{"torch-version"});
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(resultOf(report, i, "torch-version").state, CheckState::kOk);
    EXPECT_EQ(resultOf(report, i, "torch-version").detail, "torch 2.1.2 on all 3 nodes");
  }
}

TEST(TorchVersionTest, ANodeOnAnotherVersionFailsNamingBoth) {
  DoctorReport report = versions({"2.1.2", "2.0.1", "2.1.2"});
  compareTorchVersions(report);
  const CheckResult& odd = resultOf(report, 1, "torch-version");
  EXPECT_EQ(odd.state, CheckState::kFail);
  EXPECT_EQ(odd.detail, "torch 2.0.1, but 2.1.2 on 2 of 3 nodes");
  EXPECT_EQ(odd.fix,
            "install the same PyTorch on every node, or run one image on all: --container IMAGE");
  EXPECT_EQ(odd.facts.at("torch_version"), "2.0.1");
  EXPECT_EQ(resultOf(report, 0, "torch-version").detail, "torch 2.1.2, as on 2 of 3 nodes");
}

TEST(TorchVersionTest, OfEquallyCommonVersionsTheFirstNodesWins) {
  DoctorReport report = versions({"2.0.1", "2.1.2"});
  compareTorchVersions(report);
  EXPECT_EQ(resultOf(report, 0, "torch-version").state, CheckState::kOk);
  EXPECT_EQ(resultOf(report, 1, "torch-version").detail, "torch 2.1.2, but 2.0.1 on 1 of 2 nodes");
}

TEST(TorchVersionTest, NodesWithoutTorchAreSkippedAndTheRestCompared) {
  DoctorReport report = versions({"2.1.2", "", "2.1.2"});
  compareTorchVersions(report);
  EXPECT_EQ(resultOf(report, 1, "torch-version").state, CheckState::kSkip);
  EXPECT_EQ(resultOf(report, 1, "torch-version").detail,
            "this node did not import torch (see python)");
  EXPECT_EQ(resultOf(report, 0, "torch-version").detail,
            "torch 2.1.2 on all 2 nodes that imported it");
}

TEST(TorchVersionTest, OneNodeOrNoTorchHasNoneToCompare) {
  DoctorReport one = versions({"2.1.2"});
  compareTorchVersions(one);
  EXPECT_EQ(resultOf(one, 0, "torch-version").state, CheckState::kSkip);
  EXPECT_EQ(resultOf(one, 0, "torch-version").detail, "one node: none to compare");
  DoctorReport none = versions({"", ""});
  compareTorchVersions(none);
  EXPECT_EQ(resultOf(none, 0, "torch-version").detail, "no node imported torch (see python)");
}

TEST(TorchVersionTest, AThousandNodesWithTwoOnAnOldVersion) {
  std::vector<std::string> torch(1000, "2.1.2");
  torch[3] = torch[777] = "1.13.1";
  DoctorReport report = versions(torch);
  compareTorchVersions(report);
  size_t failed = 0;
  for (size_t i = 0; i < 1000; ++i) {
    failed += resultOf(report, i, "torch-version").state == CheckState::kFail;
  }
  EXPECT_EQ(failed, 2u);
  EXPECT_EQ(resultOf(report, 777, "torch-version").detail,
            "torch 1.13.1, but 2.1.2 on 998 of 1000 nodes");
}

}  // namespace
}  // namespace distrun::doctor
