#include "distrun/container/build_tools.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/testing/command.h"
#include "distrun/testing/container_tools.h"

namespace distrun::container {
namespace {

TEST(ProcessBuildToolsTest, ExitCodeAndTheTailOfItsOutput) {
  ProcessBuildTools runner([] { return 0; });
  std::string seen;
  ToolCall call{{"sh", "-c",
                 "echo one; echo two >&2; printf '[=] 1/2 50%%\\r[==] 2/2 100%%\\n';"
                 "exit 3"}};
  call.onOutput = [&seen](std::string_view recent) { seen = std::string(recent); };
  ToolExit exit = runner.run(call);
  EXPECT_EQ(exit.code, 3);
  EXPECT_EQ(exit.tail, "one\ntwo\n[==] 2/2 100%");  // a bar's last state only
  EXPECT_NE(seen.find("two"), std::string::npos);
}

TEST(ProcessBuildToolsTest, AMissingProgramIs127) {
  ProcessBuildTools runner([] { return 0; });
  EXPECT_EQ(runner.run({{"/nonexistent/tool"}}).code, 127);
}

TEST(ProcessBuildToolsTest, ItsInputIsEmpty) {
  ProcessBuildTools runner([] { return 0; });
  EXPECT_EQ(runner.run({{"sh", "-c", "cat; echo done"}}).tail, "done");
}

TEST(ProcessBuildToolsTest, TicksWhileItRuns) {
  ProcessBuildTools runner([] { return 0; });
  int ticks = 0;
  ToolCall call{{"sleep", "1"}};
  call.onTick = [&ticks] { ++ticks; };
  call.tickSeconds = 0.2;
  EXPECT_EQ(runner.run(call).code, 0);
  EXPECT_GE(ticks, 1);
}

// The interrupt reaches the tool's whole process group (a shell and its
// children), and the runner throws with the signal.
TEST(ProcessBuildToolsTest, AnInterruptStopsTheToolsGroup) {
  distrun::testing::ScratchDir scratch("tool-runner");
  const std::string pids = scratch.path() + "/pids";
  std::atomic<int> signal{0};
  ProcessBuildTools runner([&signal] { return signal.load(); }, 10.0);
  ToolCall call{{"sh", "-c", "sleep 60 & echo $! > " + pids + "; echo started; wait"}};
  call.onOutput = [&signal](std::string_view recent) {
    if (recent.find("started") != std::string_view::npos) signal = SIGTERM;
  };
  try {
    runner.run(call);
    FAIL() << "no interrupt";
  } catch (const BuildInterrupted& e) {
    EXPECT_EQ(e.signal(), SIGTERM);
  }
  std::vector<int> children = distrun::testing::readInts(pids);
  ASSERT_EQ(children.size(), 1u);
  EXPECT_FALSE(distrun::testing::processAlive(children[0]));
}

// A tool that ignores the signal is killed after the grace period.
TEST(ProcessBuildToolsTest, AToolIgnoringTheInterruptIsKilledAfterTheGrace) {
  std::atomic<int> signal{0};
  ProcessBuildTools runner([&signal] { return signal.load(); }, 0.5);
  ToolCall call{{"sh", "-c", "trap '' INT; echo started; sleep 60"}};
  call.onOutput = [&signal](std::string_view) { signal = SIGINT; };
  EXPECT_THROW(runner.run(call), BuildInterrupted);
}

TEST(ProcessBuildToolsTest, AnInterruptBeforeTheStartStartsNothing) {
  ProcessBuildTools runner([] { return SIGINT; });
  EXPECT_THROW(runner.run({{"sh", "-c", "exit 0"}}), BuildInterrupted);
}

TEST(InterruptCatcherTest, RecordsTheSignalAndRestoresTheHandler) {
  {
    InterruptCatcher catcher;
    EXPECT_EQ(catcher.caught(), 0);
    ::raise(SIGTERM);
    EXPECT_EQ(catcher.caught(), SIGTERM);
    ::raise(SIGINT);
    EXPECT_EQ(catcher.caught(), SIGTERM);  // the first one counts
  }
  struct sigaction now {};
  ::sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace distrun::container
