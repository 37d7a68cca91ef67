#include "distrun/submit/job_watch.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::submit {
namespace {

using ::testing::HasSubstr;

// Slurm as a script: each command's answers in order, the last repeated.
struct ScriptedSlurm {
  std::map<std::string, std::vector<ToolResult>> answers;  // by argv[0]
  std::vector<std::string> calls;
  ToolResult operator()(const std::vector<std::string>& argv, const std::string&) {
    calls.push_back(join(argv, " "));
    std::vector<ToolResult>& queue = answers[argv[0]];
    if (queue.empty()) return {1, "", argv[0] + ": error: not scripted\n"};
    ToolResult r = queue.front();
    if (queue.size() > 1) queue.erase(queue.begin());
    return r;
  }
};

struct Watch {
  ScriptedSlurm slurm;
  std::ostringstream out, err;
  double slept = 0;
  int interruptAfterSleeps = -1;
  std::optional<bool> answer;  // the terminal's; nullopt: none
  int sleeps = 0;
  std::function<void(int)> onSleep = [](int) {};  // the job meanwhile
  StatusMode status = StatusMode::kNone;
  std::string statusPath;

  int run(const std::string& outputPath = "") {
    WatchWorld world{[this](const auto& argv, const auto& input) { return slurm(argv, input); },
                     [this](double s) {
                       slept += s;
                       onSleep(++sleeps);
                     },
                     [this] { return sleeps == interruptAfterSleeps; },
                     [this](const std::string&) { return answer; },
                     out,
                     err,
                     status,
                     [] { return 60; }};
    return watchJob({"42", outputPath, statusPath}, world);
  }
  size_t count(const std::string& command) const {
    return static_cast<size_t>(
        std::count_if(slurm.calls.begin(), slurm.calls.end(),
                      [&](const auto& c) { return c.rfind(command, 0) == 0; }));
  }
};

TEST(JobWatchTest, FollowsTheJobToItsEndAndReturnsItsExitCode) {
  Watch w;
  w.slurm.answers["squeue"] = {
      {0, "PENDING\n", ""}, {0, "RUNNING\n", ""}, {0, "RUNNING\n", ""}, {0, "", ""}};
  w.slurm.answers["scontrol"] = {
      {0, "JobId=42 JobName=x JobState=FAILED Reason=x ExitCode=3:0\n", ""}};
  EXPECT_EQ(w.run(), 3);
  EXPECT_THAT(w.err.str(), HasSubstr("distrun submit: job 42 is PENDING\n"));
  EXPECT_THAT(w.err.str(), HasSubstr("distrun submit: job 42 is RUNNING\n"));
  EXPECT_THAT(w.err.str(), HasSubstr("distrun submit: job 42 ended FAILED with exit code 3\n"));
  EXPECT_EQ(w.count("squeue"), 4u);
}

TEST(JobWatchTest, PollsBackOffFromOneSecondToThirty) {
  Watch w;
  std::vector<ToolResult> running(12, ToolResult{0, "RUNNING\n", ""});
  running.push_back({0, "COMPLETED\n", ""});
  w.slurm.answers["squeue"] = running;
  w.slurm.answers["scontrol"] = {{0, "JobState=COMPLETED ExitCode=0:0", ""}};
  EXPECT_EQ(w.run(), 0);
  // 1 + 2 + 4 + 8 + 16 + 30 * 7 seconds between the 13 polls.
  EXPECT_DOUBLE_EQ(w.slept, 1 + 2 + 4 + 8 + 16 + 30.0 * 7);
}

TEST(JobWatchTest, ASignalIsTheShellsCodeAndSacctServesWhenScontrolForgot) {
  Watch w;
  w.slurm.answers["squeue"] = {{0, "", ""}};
  w.slurm.answers["scontrol"] = {{1, "", "slurm_load_jobs error: Invalid job id specified\n"}};
  w.slurm.answers["sacct"] = {{0, "CANCELLED by 0|0:15\n", ""}};
  EXPECT_EQ(w.run(), 128 + 15);
  EXPECT_THAT(w.err.str(), HasSubstr("ended CANCELLED with exit code 143"));
}

TEST(JobWatchTest, AJobSlurmForgotWithoutAccountingIsAnErrorSayingWhy) {
  Watch w;
  w.slurm.answers["squeue"] = {{0, "", ""}};
  w.slurm.answers["scontrol"] = {{1, "", "Invalid job id\n"}};
  w.slurm.answers["sacct"] = {{1, "", "sacct: error: Slurm accounting storage is disabled\n"}};
  try {
    w.run("slurm-42.out");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kPeerLost);
    EXPECT_THAT(e.what(), HasSubstr("job 42 has left Slurm's queue and its exit code is gone"));
    EXPECT_THAT(e.what(), HasSubstr("its output is slurm-42.out"));
  }
}

TEST(JobWatchTest, StreamsTheOutputFileAsItGrows) {
  std::string path = ::testing::TempDir() + "/watch-" + std::to_string(::getpid()) + ".out";
  std::filesystem::remove(path);
  Watch w;
  w.slurm.answers["squeue"] = {
      {0, "PENDING\n", ""}, {0, "RUNNING\n", ""}, {0, "RUNNING\n", ""}, {0, "COMPLETED\n", ""}};
  w.slurm.answers["scontrol"] = {{0, "JobState=COMPLETED ExitCode=0:0", ""}};
  w.onSleep = [&path](int sleeps) {
    if (sleeps == 2) std::ofstream(path) << "epoch 1\n";
    if (sleeps == 5) std::ofstream(path, std::ios::app) << "epoch 2\n";
  };
  EXPECT_EQ(w.run(path), 0);
  EXPECT_EQ(w.out.str(), "epoch 1\nepoch 2\n");
  std::filesystem::remove(path);
}

std::string scratch(const std::string& name) {
  std::string path = ::testing::TempDir() + "/watch-" + std::to_string(::getpid()) + name;
  std::filesystem::remove(path);
  return path;
}

// On a terminal: the state, then the progress of the job's status file, on
// one line under the output, which is copied a whole line at a time.
TEST(JobWatchTest, OnATerminalTheStateThenTheProgressUnderTheOutput) {
  Watch w;
  const std::string output = scratch(".out");
  w.statusPath = scratch(".out.status");
  w.status = StatusMode::kLine;
  w.slurm.answers["squeue"] = {
      {0, "PENDING\n", ""}, {0, "RUNNING\n", ""}, {0, "RUNNING\n", ""}, {0, "COMPLETED\n", ""}};
  w.slurm.answers["scontrol"] = {{0, "JobState=COMPLETED ExitCode=0:0", ""}};
  w.onSleep = [&](int sleeps) {
    if (sleeps == 2) std::ofstream(output) << "[0:0] epoch 1";
    if (sleeps == 3) std::ofstream(w.statusPath) << "status epoch=1 epochs=3 step=5 steps=10\n";
    if (sleeps == 4) std::ofstream(output, std::ios::app) << " done\n[0:0] end";
  };
  EXPECT_EQ(w.run(output), 0);
  EXPECT_EQ(w.out.str(), "[0:0] epoch 1 done\n[0:0] end");
  const std::string err = w.err.str();
  EXPECT_THAT(err, HasSubstr("distrun submit: job 42 is PENDING\n\rjob 42 PENDING 0 s\x1b[K"));
  EXPECT_THAT(err, HasSubstr("\r\x1b[Kdistrun submit: job 42 is RUNNING\n\rjob 42 RUNNING 0 s"));
  EXPECT_THAT(err, HasSubstr("\rjob 42 RUNNING 1 s  epoch 1/3  step 5/10\x1b[K"));
  EXPECT_THAT(err,
              ::testing::EndsWith("\r\x1b[Kdistrun submit: job 42 is COMPLETED\n"
                                  "distrun submit: job 42 ended COMPLETED with exit code 0\n"));
  std::filesystem::remove(output);
  std::filesystem::remove(w.statusPath);
}

// Elsewhere: a plain line every 30 s, once the status file has a record.
TEST(JobWatchTest, ElsewhereAPlainLineEveryThirtySecondsWithTheProgress) {
  Watch w;
  w.statusPath = scratch(".status");
  w.status = StatusMode::kPlain;
  std::vector<ToolResult> running(8, ToolResult{0, "RUNNING\n", ""});
  running.push_back({0, "COMPLETED\n", ""});
  w.slurm.answers["squeue"] = running;
  w.slurm.answers["scontrol"] = {{0, "JobState=COMPLETED ExitCode=0:0", ""}};
  w.onSleep = [&](int sleeps) {
    if (sleeps == 100) std::ofstream(w.statusPath) << "status step=5 steps=10\n";
  };
  EXPECT_EQ(w.run(), 0);
  const std::string err = w.err.str();
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
  EXPECT_THAT(err, HasSubstr("distrun submit: job 42 is RUNNING\n"
                             "distrun submit: job 42 RUNNING 50 s  step 5/10\n"
                             "distrun submit: job 42 RUNNING 1:20  step 5/10\n"
                             "distrun submit: job 42 RUNNING 1:50  step 5/10\n"
                             "distrun submit: job 42 is COMPLETED\n"));
  std::filesystem::remove(w.statusPath);
}

TEST(JobWatchTest, CtrlCWithoutATerminalLeavesTheJobRunning) {
  Watch w;
  w.slurm.answers["squeue"] = {{0, "RUNNING\n", ""}};
  w.interruptAfterSleeps = 3;
  EXPECT_EQ(w.run(), 130);
  EXPECT_THAT(w.err.str(),
              HasSubstr("stopped following job 42; it keeps running (scancel 42 stops it)"));
  EXPECT_EQ(w.count("scancel"), 0u);
}

TEST(JobWatchTest, CtrlCOnATerminalCancelsWhenTheUserSaysSo) {
  Watch w;
  w.slurm.answers["squeue"] = {{0, "RUNNING\n", ""}};
  w.slurm.answers["scancel"] = {{0, "", ""}};
  w.interruptAfterSleeps = 2;
  w.answer = true;
  EXPECT_EQ(w.run(), 130);
  EXPECT_THAT(w.err.str(), HasSubstr("distrun submit: job 42 cancelled\n"));
  EXPECT_EQ(w.count("scancel 42"), 1u);
}

TEST(JobWatchTest, OutputPatternsExpandAsSbatchDoes) {
  EXPECT_EQ(expandOutputPattern("slurm-%j.out", "7", "x", "u"), "slurm-7.out");
  EXPECT_EQ(expandOutputPattern("logs/%x-%A-%u.log", "7", "train", "ana"), "logs/train-7-ana.log");
  EXPECT_EQ(expandOutputPattern("100%%.out", "7", "x", "u"), "100%.out");
  EXPECT_EQ(expandOutputPattern("out-%N.log", "7", "x", "u"), std::nullopt);
}

}  // namespace
}  // namespace distrun::submit
