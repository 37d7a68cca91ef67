// The parts of distrun doctor that gather and judge across nodes, and its
// command line.
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cluster/master_port.h"
#include "distrun/common/error.h"
#include "distrun/doctor/allreduce_check.h"
#include "distrun/doctor/checks.h"
#include "distrun/doctor/clock_check.h"
#include "distrun/doctor/doctor_cli.h"
#include "distrun/doctor/job_report.h"
#include "distrun/doctor/meeting.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::doctor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MeetingTest, TheDoctorsPortIsHalfTheDerivedRangeAwayFromMasterPort) {
  EXPECT_EQ(doctorPort(20000), 25000);
  EXPECT_EQ(doctorPort(27000), 22000);
  EXPECT_EQ(doctorPort(29500), 24500);
  for (int port : {1, 1024, 19999, 29999, 65535}) {
    const int mine = doctorPort(port);
    EXPECT_NE(mine, port);
    EXPECT_GE(mine, cluster::kFirstDerivedPort);
    EXPECT_LT(mine, cluster::kFirstDerivedPort + cluster::kDerivedPortCount);
  }
}

ProbeContext jobOf(int nodes, int worldSize) {
  ProbeContext ctx;
  ctx.layout.worldSize = worldSize;
  ctx.layout.numNodes = nodes;
  ctx.layout.masterHost = "n1";
  for (int i = 1; i <= nodes; ++i) ctx.layout.hosts.push_back("n" + std::to_string(i));
  ctx.node = "n1";
  return ctx;
}

TEST(MeetingTest, ItNeedsMasterAddrAndAValidMasterPort) {
  ProbeContext ctx = jobOf(2, 2);
  ctx.env.set("MASTER_PORT", "29500");
  EXPECT_THROW(
      {
        try {
          meetingOf(ctx);
        } catch (const ConfigError& e) {
          EXPECT_THAT(e.what(), HasSubstr("MASTER_ADDR is not set"));
          throw;
        }
      },
      ConfigError);
  ctx.env.set("MASTER_ADDR", "n1");
  ctx.env.set("MASTER_PORT", "99999");
  EXPECT_THROW(meetingOf(ctx), ConfigError);
  ctx.env.set("MASTER_PORT", "29500");
  ctx.env.set("XDG_CONFIG_HOME", ::testing::TempDir() + "/doctor-config");
  Meeting m = meetingOf(ctx);
  EXPECT_EQ(m.host, "n1");
  EXPECT_EQ(m.port, 24500);
  EXPECT_EQ(m.answerWindow, std::chrono::seconds(150));
  EXPECT_EQ(m.token.size(), 64u);  // HMAC-SHA256 of the user's secret (docs/security.md)
}

TEST(ClockTest, SkewIsTheMiddleOfTheRoundTripAgainstRankZero) {
  ClockSample s{1000, 900, 1010};
  EXPECT_DOUBLE_EQ(s.skewMs(), 105);
  EXPECT_DOUBLE_EQ(s.uncertaintyMs(), 5);
}

TEST(ClockTest, CloseClocksPassFarOnesWarnOrFail) {
  CheckResult near = judgeClock(ClockSample{1000, 1002, 1006}, "n1");
  EXPECT_EQ(near.state, CheckState::kOk);
  EXPECT_EQ(near.detail, "+1.0 ms against n1 (+/- 3.0 ms)");
  EXPECT_DOUBLE_EQ(near.values.at("skew_ms"), 1);
  CheckResult off = judgeClock(ClockSample{1000, 800, 1002}, "n1");
  EXPECT_EQ(off.state, CheckState::kWarn);
  EXPECT_EQ(off.detail, "+201.0 ms against n1 (+/- 1.0 ms); over 50 ms");
  CheckResult far = judgeClock(ClockSample{10000, 1000, 10002}, "n1");
  EXPECT_EQ(far.state, CheckState::kFail);
  EXPECT_THAT(far.fix, HasSubstr("chronyc tracking"));
  EXPECT_EQ(judgeClock(std::nullopt, "n1").state, CheckState::kWarn);
}

TEST(AllreduceTest, BelowTheMinimumOrWrongValuesFail) {
  AllreduceFigures f{.nodes = 4, .bytes = 64 << 20, .busbwGbps = 12.5, .timeUs = 900, .wrong = 0};
  CheckResult good = judgeAllreduce(f, std::nullopt);
  EXPECT_EQ(good.state, CheckState::kOk);
  EXPECT_EQ(good.detail, "12.50 GB/s bus bandwidth, 64 MiB among 4 nodes");
  EXPECT_DOUBLE_EQ(good.values.at("busbw_gbps"), 12.5);
  CheckResult slow = judgeAllreduce(f, 20.0);
  EXPECT_EQ(slow.state, CheckState::kFail);
  EXPECT_THAT(slow.detail, HasSubstr("at least 20.00 GB/s wanted (--min-busbw)"));
  f.wrong = 3;
  EXPECT_THAT(judgeAllreduce(f, std::nullopt).detail, HasSubstr("3 values came back wrong"));
}

NodeReport reportOf(const std::string& node, std::vector<CheckResult> results) {
  return NodeReport{node, std::move(results)};
}

CheckResult binding(CheckState state, const std::string& localRank, const std::string& detail) {
  CheckResult r =
      state == CheckState::kOk ? ok("cpu-binding", detail) : fail("cpu-binding", detail, "fix it");
  r.facts["local_rank"] = localRank;
  return r;
}

TEST(AssembleTest, NodesInSchedulerOrderWithAnswerFirstAndAllreduceOnAnsweredNodes) {
  ProbeContext ctx = jobOf(3, 3);
  JobAnswers answers;
  answers.reports = {reportOf("n1", {ok("tmpdir", "fine")}), std::nullopt,
                     reportOf("n3", {ok("tmpdir", "fine")})};
  answers.allreduce = allreduceSkipped(allreduceDecision(ctx, answers));
  DoctorReport report = assembleReport(ctx, answers, std::chrono::seconds(40));
  ASSERT_EQ(report.nodes.size(), 3u);
  EXPECT_EQ(report.nodes[1].node, "n2");
  const CheckResult* silent = report.nodes[1].find("answer");
  ASSERT_NE(silent, nullptr);
  EXPECT_EQ(silent->state, CheckState::kFail);
  EXPECT_EQ(silent->detail, "rank 1 did not report within 40 s");
  EXPECT_EQ(report.nodes[1].find("allreduce"), nullptr);
  const CheckResult* allreduce = report.nodes[0].find("allreduce");
  ASSERT_NE(allreduce, nullptr);
  EXPECT_EQ(allreduce->state, CheckState::kSkip);
  EXPECT_EQ(allreduce->detail, "not measured: 1 task(s) did not report in time");
  EXPECT_EQ(report.nodes[0].results.front().check, "answer");
  EXPECT_THAT(report.checks,
              ElementsAre("answer", "tmpdir", "torch-version", "straggler", "allreduce"));
  EXPECT_EQ(worstState(report), CheckState::kFail);
}

TEST(AssembleTest, AFurtherTasksWorseBindingCountsAndSaysWhose) {
  ProbeContext ctx = jobOf(1, 2);
  JobAnswers answers;
  answers.reports = {reportOf("n1", {binding(CheckState::kOk, "0", "cores 0-3")}),
                     reportOf("n1", {binding(CheckState::kFail, "1", "cores 0 not 4-7")})};
  DoctorReport report = assembleReport(ctx, answers, std::chrono::seconds(40));
  ASSERT_EQ(report.nodes.size(), 1u);
  const CheckResult* merged = report.nodes[0].find("cpu-binding");
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->state, CheckState::kFail);
  EXPECT_EQ(merged->detail, "local rank 1: cores 0 not 4-7");
}

TEST(AssembleTest, OneNodeSkipsTheClockWithItsReason) {
  ProbeContext ctx = jobOf(1, 1);
  JobAnswers answers;
  answers.reports = {reportOf("n1", {})};
  DoctorReport report = assembleReport(ctx, answers, std::chrono::seconds(0));
  const CheckResult* clock = report.nodes[0].find("clock");
  ASSERT_NE(clock, nullptr);
  EXPECT_EQ(clock->state, CheckState::kSkip);
  EXPECT_EQ(clock->detail, "one node: no other clock to compare with");
}

TEST(AssembleTest, TheAllreduceRunsOnlyWhenSelectedOnSeveralNodesThatAllAnswered) {
  ProbeContext ctx = jobOf(2, 2);
  JobAnswers answers;
  answers.reports = {reportOf("n1", {}), reportOf("n2", {})};
  EXPECT_EQ(allreduceDecision(ctx, answers), "go");
  ctx.options.checks = {"tmpdir"};
  EXPECT_EQ(allreduceDecision(ctx, answers), "skip:not selected (--checks)");
  EXPECT_EQ(allreduceDecision(jobOf(1, 1), answers),
            "skip:one node: no network between nodes to measure");
}

// The command line, with a recorded exec instead of srun.
struct Cli {
  MapEnvironment env;
  std::ostringstream out;
  std::ostringstream err;
  std::vector<std::string> execed;
  int run(const std::vector<std::string>& args) {
    DoctorContext ctx{.env = env,
                      .out = out,
                      .err = err,
                      .hostFacts =
                          [] {
                            return HostFacts{"vm", 2};
                          },
                      .executable = "/opt/distrun/bin/distrun-doctor",
                      .builtinSiteDir = std::string(DISTRUN_SOURCE_DIR) + "/share/sites",
                      .toolDir = "/opt/distrun/bin",
                      .exec = [this](const std::vector<std::string>& argv) { execed = argv; }};
    return runDoctorCli(args, ctx);
  }
};

TEST(DoctorCliTest, MistakesAreRefusedBeforeAnythingRuns) {
  struct Row {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Row> rows = {
      {{"--format", "yaml"}, 64, "distrun: error: --format yaml: expected table, json or nhc\n"},
      {{"--checks", "tmpdr"},
       64,
       "distrun: error: --checks: 'tmpdr' is not a check: did you "
       "mean tmpdir?\n"},
      {{"--time-limit", "0"},
       64,
       "distrun: error: --time-limit 0: expected whole seconds, at "
       "least 1\n"},
      {{"--min-busbw", "0"}, 64, "distrun: error: --min-busbw 0: expected GB/s above 0\n"},
      {{"--nproc-per-node", "0"}, 64, "distrun: error: --nproc-per-node 0: expected at least 1\n"},
      {{"--straggler-margin", "-5"},
       64,
       "distrun: error: --straggler-margin -5: expected a percentage above 0\n"},
      {{"--container", "/nonexistent/img.sif"}, 66, "/nonexistent/img.sif"},
      {{"--site", "nosuchsite"}, 78, "nosuchsite"},
  };
  for (const Row& row : rows) {
    Cli cli;
    cli.env.set("SLURM_JOB_ID", "42");  // would start srun, were the flags right
    EXPECT_EQ(cli.run(row.args), row.code) << row.args.front();
    EXPECT_THAT(cli.err.str(), HasSubstr(row.message)) << row.args.front();
    if (row.code == 64) {
      EXPECT_EQ(cli.err.str(), row.message);
    }
    EXPECT_TRUE(cli.execed.empty()) << row.args.front();
  }
}

TEST(DoctorCliTest, AnUnknownFlagIsNamed) {
  Cli cli;
  EXPECT_EQ(cli.run({"--min-bus", "3"}), 64);
  EXPECT_THAT(cli.err.str(), HasSubstr("--min-bus"));
}

TEST(DoctorCliTest, InAnAllocationOutsideAStepItStartsItselfWithSrun) {
  Cli cli;
  cli.env = MapEnvironment{
      {"SLURM_JOB_ID", "42"}, {"SLURM_JOB_NUM_NODES", "4"}, {"SLURM_CPUS_ON_NODE", "128"}};
  cli.run({"--format", "json"});
  EXPECT_THAT(cli.execed, ElementsAre("srun", "--ntasks-per-node=1", "--cpu-bind=none",
                                      "--kill-on-bad-exit=0", "--nodes=4", "--cpus-per-task=128",
                                      "/opt/distrun/bin/distrun-doctor", "--format", "json"));
}

TEST(DoctorCliTest, ListNamesEveryCheck) {
  Cli cli;
  EXPECT_EQ(cli.run({"--list"}), 0);
  for (const std::string& name : allCheckNames()) {
    EXPECT_THAT(cli.out.str(), HasSubstr(name + " ")) << name;
  }
}

}  // namespace
}  // namespace distrun::doctor
