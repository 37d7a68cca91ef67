#include "distrun/submit/sbatch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/submit/sbatch_flags.h"

namespace distrun::submit {
namespace {

SlurmTool answering(ToolResult result, std::vector<std::string>* argv = nullptr,
                    std::string* input = nullptr) {
  return [=](const std::vector<std::string>& a, const std::string& in) {
    if (argv != nullptr) *argv = a;
    if (input != nullptr) *input = in;
    return result;
  };
}

TEST(SbatchTest, SubmitsTheScriptOnStandardInputAndReadsTheId) {
  std::vector<std::string> argv;
  std::string input;
  SubmittedJob job = submitScript(answering({0, "4242\n", ""}, &argv, &input), "#!/bin/bash\n");
  EXPECT_EQ(job.id, "4242");
  EXPECT_EQ(job.cluster, "");
  EXPECT_EQ(argv, (std::vector<std::string>{"sbatch", "--parsable"}));
  EXPECT_EQ(input, "#!/bin/bash\n");
  EXPECT_EQ(submitScript(answering({0, "17;lumi\n", ""}), "").cluster, "lumi");
}

TEST(SbatchTest, ARefusalIsRelayedInOneLine) {
  try {
    submitScript(answering({1, "",
                            "sbatch: error: Batch job submission failed: Invalid account or "
                            "account/partition combination specified\n"}),
                 "");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "submit: sbatch refused the job: Batch job submission failed: Invalid account or "
                 "account/partition combination specified");
  }
}

TEST(SbatchTest, AMissingSbatchSaysWhereToRunIt) {
  try {
    submitScript(answering({127, "", ""}), "");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kNotFound);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("sbatch not found on PATH"));
  }
}

TEST(SbatchTest, AnAnswerThatIsNoJobIdIsNamed) {
  EXPECT_THROW(submitScript(answering({0, "Submitted batch job 5\n", ""}), ""), Error);
}

TEST(SbatchTest, SlurmMessageTakesTheErrorLineWithoutItsPrefix) {
  EXPECT_EQ(slurmMessage({1, "", "sbatch: warning: x\nsbatch: error: no partition\n"}),
            "no partition");
  EXPECT_EQ(slurmMessage({1, "", "something odd\n"}), "something odd");
  EXPECT_EQ(slurmMessage({1, "",
                          "sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error\n"
                          "sbatch: fatal: Could not establish a configuration source\n"}),
            "Could not establish a configuration source");
  EXPECT_EQ(slurmMessage({2, "", ""}), "it exited with status 2 and said nothing");
}

// sbatch's flags given to submit: the --sbatch-arg form, with the value
// given, or VALUE; a flag that takes none alone; anything else is not one.
TEST(SbatchFlagsTest, AnSbatchFlagGetsItsSbatchArgForm) {
  const std::string prefix = "submit: --mem is sbatch's flag, not distrun submit's: pass it ";
  EXPECT_EQ(sbatchFlagMessage({"--mem", "480G", "--"}),
            prefix + "through as --sbatch-arg=--mem=480G");
  EXPECT_EQ(sbatchFlagMessage({"--mem=1G"}), prefix + "through as --sbatch-arg=--mem=1G");
  EXPECT_EQ(sbatchFlagMessage({"--mem"}), prefix + "through as --sbatch-arg=--mem=VALUE");
  EXPECT_EQ(sbatchFlagMessage({"--hold", "run"}),
            "submit: --hold is sbatch's flag, not distrun submit's: pass it through as "
            "--sbatch-arg=--hold");
  EXPECT_EQ(sbatchFlagMessage({"--acount", "proj"}), std::nullopt);
  EXPECT_EQ(sbatchFlagMessage({"train.py"}), std::nullopt);
  EXPECT_EQ(sbatchFlagMessage({}), std::nullopt);
}

}  // namespace
}  // namespace distrun::submit
