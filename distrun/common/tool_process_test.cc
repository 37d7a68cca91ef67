#include "distrun/common/tool_process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "distrun/common/system.h"

namespace distrun {
namespace {

TEST(ToolProcessTest, CollectsBothOutputsAndTheExitCode) {
  ToolResult r = runTool({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(ToolProcessTest, FeedsItsInput) {
  std::string big(200000, 'x');  // larger than a pipe's buffer both ways
  ToolResult r = runTool({"cat"}, big);
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out, big);
}

TEST(ToolProcessTest, AToolThatIgnoresItsInputIsNoSigpipe) {
  ToolResult r = runTool({"true"}, std::string(1 << 20, 'x'));
  EXPECT_EQ(r.exitCode, 0);
}

TEST(ToolProcessTest, AMissingToolExits127) {
  EXPECT_EQ(runTool({"distrun-no-such-tool"}).exitCode, 127);
}

TEST(ToolProcessTest, AKilledToolIs128PlusTheSignal) {
  EXPECT_EQ(runTool({"sh", "-c", "kill -9 $$"}).exitCode, 137);
}

// Generous: how long a SIGKILLed process may take to be gone on a loaded machine.
constexpr std::chrono::seconds kGoneWithin{20};

bool goneWithin(long pid, std::chrono::seconds bound) {
  const auto giveUp = std::chrono::steady_clock::now() + bound;
  while (!processExited(pid)) {
    if (std::chrono::steady_clock::now() > giveUp) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

ToolRequest request(std::vector<std::string> argv, std::chrono::milliseconds limit) {
  ToolRequest r;
  r.argv = std::move(argv);
  r.limit = limit;
  return r;
}

TEST(ToolWithinTest, AToolThatEndsInTimeIsNotTimedOut) {
  ToolResult r = runToolWithin(
      request({"sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(60)));
  EXPECT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(ToolWithinTest, TheLimitKillsTheToolAndWhatItStarted) {
  // The shell prints its sleeping child's pid, then waits on it.
  ToolResult r = runToolWithin(request({"sh", "-c", "sleep 60 & echo $!; echo started >&2; wait"},
                                       std::chrono::milliseconds(300)));
  EXPECT_TRUE(r.timedOut);
  EXPECT_EQ(r.exitCode, 137);
  EXPECT_EQ(r.err, "started\n");  // what it wrote before the limit is kept
  const long grandchild = std::stol(r.out);
  EXPECT_TRUE(goneWithin(grandchild, kGoneWithin)) << "sleep " << grandchild << " still runs";
}

TEST(ToolWithinTest, AToolThatClosesItsOutputIsStillBoundByTheLimit) {
  ToolResult r = runToolWithin(
      request({"sh", "-c", "exec >&- 2>&-; sleep 60"}, std::chrono::milliseconds(300)));
  EXPECT_TRUE(r.timedOut);
  EXPECT_EQ(r.exitCode, 137);
}

TEST(ToolWithinTest, RunsInItsOwnProcessGroup) {
  ToolResult r =
      runToolWithin(request({"sh", "-c", "cut -d' ' -f5 /proc/$$/stat"}, std::chrono::seconds(60)));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(std::stol(r.out), static_cast<long>(::getpgrp()));
}

TEST(ToolWithinTest, PassesTheEnvironmentGiven) {
  ToolRequest r =
      request({"sh", "-c", "echo \"$DISTRUN_TEST_VALUE:$HOME\""}, std::chrono::seconds(60));
  r.environment = std::map<std::string, std::string>{{"DISTRUN_TEST_VALUE", "given"},
                                                     {"PATH", "/usr/bin:/bin"}};
  ToolResult result = runToolWithin(r);
  EXPECT_EQ(result.out, "given:\n");  // HOME was not given, so it is not there
}

TEST(ToolWithinTest, LooksTheToolUpOnThePathOfTheEnvironmentGiven) {
  ToolRequest r = request({"sh", "-c", "true"}, std::chrono::seconds(60));
  r.environment = std::map<std::string, std::string>{{"PATH", "/distrun-no-such-folder"}};
  EXPECT_EQ(runToolWithin(r).exitCode, 127);
}

TEST(ToolWithinTest, InheritsThisProcesssEnvironmentByDefault) {
  ::setenv("DISTRUN_TOOL_WITHIN_TEST", "inherited", 1);
  ToolResult r = runToolWithin(
      request({"sh", "-c", "echo $DISTRUN_TOOL_WITHIN_TEST"}, std::chrono::seconds(60)));
  ::unsetenv("DISTRUN_TOOL_WITHIN_TEST");
  EXPECT_EQ(r.out, "inherited\n");
}

TEST(ToolWithinTest, FeedsItsInputAndReportsAMissingTool) {
  ToolRequest r = request({"cat"}, std::chrono::seconds(60));
  r.input = std::string(200000, 'x');
  EXPECT_EQ(runToolWithin(r).out, r.input);
  EXPECT_EQ(runToolWithin(request({"distrun-no-such-tool"}, std::chrono::seconds(60))).exitCode,
            127);
}

}  // namespace
}  // namespace distrun
