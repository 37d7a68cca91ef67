// `distrun doctor` run bare on this machine, with Debian's PyTorch: every
// check passes or says why it does not apply, and it exits 0.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/command.h"
#include "distrun/testing/slurm_fixture.h"

namespace distrun::testing {
namespace {

using nlohmann::json;

TEST(DoctorProcessTest, AHealthyMachinePassesEveryCheckOrSaysWhyItSkips) {
  if (std::string why = pythonTorchUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  CommandResult r = runCommand("env -u SLURM_JOB_ID " + quote(binaryPath("distrun")) +
                               " doctor --format json --python /usr/bin/python3");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  json report = json::parse(r.out);
  ASSERT_EQ(report.at("nodes").size(), 1u);
  for (const json& check : report.at("checks")) {
    for (const json& result : check.at("results")) {
      const std::string state = result.at("state");
      EXPECT_TRUE(state == "ok" || state == "skip") << check.at("name") << ": " << result;
      EXPECT_NE(result.at("detail"), "") << check.at("name");
    }
  }
  EXPECT_EQ(report.at("checks").size(), 18u) << r.out;
}

TEST(DoctorProcessTest, TheTableSaysAllPassedAndWhyChecksWereSkipped) {
  if (std::string why = pythonTorchUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  CommandResult r = runCommand("env -u SLURM_JOB_ID " + quote(binaryPath("distrun")) +
                               " doctor --python /usr/bin/python3");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("18 checks: all passed"));
  EXPECT_THAT(r.out,
              ::testing::HasSubstr("skip allreduce on "));  // the reason follows the node's name
}

}  // namespace
}  // namespace distrun::testing
