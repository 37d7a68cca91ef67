#include "distrun/common/tool_process.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace distrun
