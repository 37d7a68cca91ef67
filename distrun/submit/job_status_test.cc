#include "distrun/submit/job_status.h"

#include <stdio.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "distrun/common/strings.h"

namespace distrun::submit {
namespace {

TEST(JobStatusTest, TheStatusFileLiesNextToTheOutput) {
  EXPECT_EQ(statusFileOf("slurm-42.out"), "slurm-42.out.status");
}

TEST(JobStatusTest, TheBatchScriptsWordExpandsAsSbatchExpandsTheOutput) {
  EXPECT_EQ(statusFileWord("slurm-%j.out"), "\"slurm-${SLURM_JOB_ID}.out.status\"");
  EXPECT_EQ(statusFileWord("logs/%x-%A-%u.log"),
            "\"logs/${SLURM_JOB_NAME}-${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}-$(id -un).log.status\"");
  EXPECT_EQ(statusFileWord("100%%$HOME\"`x`\\.out"), "\"100%\\$HOME\\\"\\`x\\`\\\\.out.status\"");
  EXPECT_EQ(statusFileWord("out-%N.log"), std::nullopt);
  EXPECT_EQ(statusFileWord("out-%t.log"), std::nullopt);
}

// The word, run by the shell inside a job, names the file that submit
// --wait reads (expandOutputPattern, statusFileOf).
TEST(JobStatusTest, TheShellExpandsTheWordToTheFileSubmitReads) {
  const std::string word = *statusFileWord("logs/%x-%j \"$odd\".out");
  const std::string command =
      "SLURM_JOB_ID=42 SLURM_JOB_NAME=train sh -c " + shellQuote("printf %s " + word);
  FILE* shell = ::popen(command.c_str(), "r");
  ASSERT_NE(shell, nullptr);
  char buffer[256] = {};
  const size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, shell);
  EXPECT_EQ(::pclose(shell), 0);
  EXPECT_EQ(std::string(buffer, n), "logs/train-42 \"$odd\".out.status");
}

TEST(JobStatusTest, TheRecordInTheFileOrNone) {
  const std::string path =
      ::testing::TempDir() + "/job_status_test_" + std::to_string(::getpid()) + ".status";
  std::filesystem::remove(path);
  EXPECT_EQ(readStatusFile(path), std::nullopt);
  std::ofstream(path) << "status epoch=1 step=3\n";
  EXPECT_EQ(readStatusFile(path)->step, 3);
  std::ofstream(path) << "not a record\n";
  EXPECT_EQ(readStatusFile(path), std::nullopt);
  std::filesystem::remove(path);
}

TEST(JobStatusTest, StateTimeThenProgress) {
  EXPECT_EQ(jobStatusText("42", "PENDING", 12, std::nullopt), "job 42 PENDING 12 s");
  StatusRecord r;
  r.epoch = 1;
  r.epochs = 3;
  r.step = 120;
  r.steps = 500;
  r.etaSeconds = 90;
  EXPECT_EQ(jobStatusText("42", "RUNNING", 65, r),
            "job 42 RUNNING 1:05  epoch 1/3  step 120/500  ETA 1:30");
  EXPECT_EQ(jobStatusText("42", "RUNNING", 65, StatusRecord{}), "job 42 RUNNING 1:05");
}

}  // namespace
}  // namespace distrun::submit
