#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cli/cli.h"
#include "distrun/submit/job_watch.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// `distrun submit ...` with sbatch answering `sbatchAnswer` and --wait's
// follower recorded.
struct Submit {
  int operator()(std::vector<std::string> args) {
    args.insert(args.begin(), "submit");
    CliContext ctx{.env = env,
                   .out = out,
                   .err = err,
                   .builtinSiteDir = std::string(DISTRUN_SOURCE_DIR) + "/share/sites",
                   .exec = [](const auto&, const auto&) {},
                   .toolDir = "/opt/distrun/bin",
                   .runTool =
                       [this](const std::vector<std::string>& argv, const std::string& input) {
                         calls.push_back(argv.front());
                         if (argv.front() != "sbatch") {
                           checked = argv;
                           return checkAnswer;
                         }
                         script = input;
                         return sbatchAnswer;
                       },
                   .watchJob =
                       [this](const submit::WatchRequest& r) {
                         watched = r;
                         return 3;
                       }};
    return runCli(args, ctx);
  }
  MapEnvironment env{{{"USER", "ana"}}};
  std::ostringstream out, err;
  ToolResult sbatchAnswer{0, "4242\n", ""};
  // The answer of distrun-doctor or distrun-bench to the check of its
  // flags (checkFlagsBy), and what it got.
  ToolResult checkAnswer{0, "answer  ...\n", ""};
  std::vector<std::string> checked;
  std::vector<std::string> calls;
  std::string script;
  std::optional<submit::WatchRequest> watched;
};

TEST(SubmitCommandTest, DryRunPrintsTheScriptAndSubmitsNothing) {
  Submit submit;
  EXPECT_EQ(submit({"--dry-run", "--site", "generic", "--nodes", "2", "--", "train",
                    "--nproc-per-node", "2", "linear"}),
            0)
      << submit.err.str();
  EXPECT_THAT(submit.out.str(), StartsWith("#!/bin/bash\n"));
  EXPECT_THAT(submit.out.str(), HasSubstr("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"));
  EXPECT_THAT(submit.out.str(),
              HasSubstr("/opt/distrun/bin/distrun train --nproc-per-node 2 linear &\n"));
  EXPECT_TRUE(submit.calls.empty());
}

TEST(SubmitCommandTest, SubmitsWithSbatchAndPrintsTheJobIdAsSbatchDoes) {
  Submit submit;
  EXPECT_EQ(submit({"--site", "generic", "--", "exec", "--", "python3", "x.py"}), 0);
  EXPECT_EQ(submit.calls, (std::vector<std::string>{"sbatch"}));
  EXPECT_THAT(submit.script, HasSubstr("distrun exec -- python3 x.py\nexit $?\n"));
  EXPECT_EQ(submit.out.str(), "Submitted batch job 4242\n");
  EXPECT_FALSE(submit.watched);
}

TEST(SubmitCommandTest, JsonForScripts) {
  Submit submit;
  EXPECT_EQ(submit({"--format", "json", "--", "train", "mnist"}), 0);
  EXPECT_EQ(submit.out.str(), "{\n  \"job_id\": \"4242\",\n  \"cluster\": null\n}\n");
  Submit dry;
  EXPECT_EQ(dry({"--format", "json", "--dry-run", "--", "train", "mnist"}), 0);
  EXPECT_THAT(dry.out.str(), StartsWith("{\n  \"job_id\": null,\n  \"script\": \"#!/bin/bash\\n"));
}

TEST(SubmitCommandTest, WaitFollowsTheJobsOutputFileAndExitsWithItsCode) {
  Submit submit;
  EXPECT_EQ(submit({"--wait", "--output", "logs/%x-%j.out", "-J", "mnist", "--", "train", "mnist"}),
            3);
  ASSERT_TRUE(submit.watched);
  EXPECT_EQ(submit.watched->jobId, "4242");
  EXPECT_EQ(submit.watched->outputPath, "logs/mnist-4242.out");
  EXPECT_EQ(submit.watched->statusPath, "logs/mnist-4242.out.status");
  Submit plain;
  plain({"--wait", "--status", "none", "--", "train", "mnist"});
  EXPECT_EQ(plain.watched->outputPath, "slurm-4242.out");
  EXPECT_EQ(plain.watched->statusPath, "slurm-4242.out.status");
}

TEST(SubmitCommandTest, AnSbatchRefusalIsRelayedInOneLine) {
  Submit submit;
  submit.sbatchAnswer = {1, "", "sbatch: error: invalid partition specified: gpu\n"};
  EXPECT_EQ(submit({"-p", "gpu", "--", "train", "mnist"}), 78);
  EXPECT_EQ(submit.err.str(),
            "distrun: error: submit: sbatch refused the job: invalid partition specified: gpu\n");
}

TEST(SubmitCommandTest, ExplainPrintsThePlanFromTheSitesNodeDescription) {
  Submit submit;
  EXPECT_EQ(submit({"--explain", "--dry-run", "--site", "marenostrum5", "--", "exec", "--",
                    "python", "train.py"}),
            0);
  EXPECT_THAT(submit.out.str(), HasSubstr("\n3      (node 0)     60-79            "));
  Submit generic;
  generic({"--explain", "--dry-run", "--site", "generic", "--", "train", "mnist"});
  EXPECT_THAT(generic.out.str(),
              StartsWith("the site profile generic does not describe its nodes"));
}

// --doctor-arg reaches the doctor's step, and distrun-doctor checks the
// step's flags (its --list) before sbatch runs.
TEST(SubmitCommandTest, DoctorArgsAreCheckedByTheDoctorThenRunByTheJob) {
  Submit submit;
  EXPECT_EQ(submit({"--doctor", "--doctor-arg=--straggler-margin=50", "--", "train", "linear"}), 0)
      << submit.err.str();
  EXPECT_EQ(submit.calls, (std::vector<std::string>{"/opt/distrun/bin/distrun-doctor", "sbatch"}));
  EXPECT_EQ(submit.checked,
            (std::vector<std::string>{"/opt/distrun/bin/distrun-doctor", "--nproc-per-node", "1",
                                      "--python", "none", "--straggler-margin=50", "--list"}));
  EXPECT_THAT(submit.script, HasSubstr("distrun doctor --nproc-per-node 1 --python none "
                                       "--straggler-margin=50 || exit $?\n"));
}

TEST(SubmitCommandTest, ADoctorFlagTheDoctorRefusesSubmitsNothing) {
  Submit submit;
  submit.checkAnswer = {64, "",
                        "distrun: error: unknown flag --stragler-margin: did you mean "
                        "--straggler-margin?\n"};
  EXPECT_EQ(submit({"--doctor", "--doctor-arg=--stragler-margin=50", "--", "train", "linear"}), 64);
  EXPECT_EQ(submit.err.str(),
            "distrun: error: doctor: unknown flag --stragler-margin: did you mean "
            "--straggler-margin?\n");
  EXPECT_EQ(submit.calls, (std::vector<std::string>{"/opt/distrun/bin/distrun-doctor"}));
  Submit silent;  // a program that cannot be run says nothing of its own
  silent.checkAnswer = {127, "", ""};
  EXPECT_EQ(silent({"--doctor", "--", "train", "linear"}), 127);
  EXPECT_EQ(silent.err.str(),
            "distrun: error: doctor: /opt/distrun/bin/distrun-doctor --list exited with 127 and "
            "said nothing\n");
  Submit alone;  // -- doctor as the job: the same check
  alone.checkAnswer = {78, "", "distrun: error: site profile 'x' not found in /s\n"};
  EXPECT_EQ(alone({"--", "doctor", "--site", "x"}), 78);
  EXPECT_EQ(alone.err.str(), "distrun: error: doctor: site profile 'x' not found in /s\n");
}

// `-- bench`: distrun-bench checks its flags with --dry-run before sbatch.
TEST(SubmitCommandTest, BenchFlagsAreCheckedByDistrunBench) {
  Submit submit;
  EXPECT_EQ(submit({"--", "bench", "all_reduce", "-e", "64M"}), 0) << submit.err.str();
  EXPECT_EQ(submit.checked,
            (std::vector<std::string>{"/opt/distrun/bin/distrun-bench", "--nproc-per-node", "1",
                                      "all_reduce", "-e", "64M", "--dry-run"}));
  Submit refused;
  refused.checkAnswer = {64, "", "distrun: error: -b 67108864 is above -e 4096\n"};
  EXPECT_EQ(refused({"--", "bench", "all_reduce", "-b", "64M", "-e", "4K"}), 64);
  EXPECT_EQ(refused.err.str(), "distrun: error: bench: -b 67108864 is above -e 4096\n");
  EXPECT_EQ(refused.calls, (std::vector<std::string>{"/opt/distrun/bin/distrun-bench"}));
}

}  // namespace
}  // namespace distrun::cli
