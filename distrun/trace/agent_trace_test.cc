#include "distrun/trace/agent_trace.h"

#include <signal.h>

#include <filesystem>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/trace/trace_testing.h"

namespace distrun::trace {
namespace {

using ::testing::ElementsAre;
using testing::readLines;
using testing::TempDir;

std::vector<std::string> namesOf(const std::vector<nlohmann::json>& lines) {
  std::vector<std::string> names;
  for (const auto& line : lines) {
    if (line.contains("name")) names.push_back(line["name"]);
  }
  return names;
}

TEST(AgentTraceTest, OffWritesNothing) {
  TempDir dir;
  std::ostringstream warnings;
  AgentTrace trace(MapEnvironment{}, 0, warnings);
  EXPECT_FALSE(trace.on());
  trace.rendezvousStarted(0);
  trace.rendezvousDone(0, 2, 1, 0);
  trace.workerStarted(0, 0, 100, 0);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(AgentTraceTest, RecordsTheLaunchersEventsUnderTheRendezvousNodeRank) {
  TempDir dir;
  std::ostringstream warnings;
  {
    AgentTrace trace(MapEnvironment{{"DISTRUN_TRACE", dir.path()}}, 0, warnings);
    trace.rendezvousStarted(0);
    trace.rendezvousDone(0, 4, 2, 1);
    trace.workerStarted(2, 0, 100, 0);
    trace.signalReceived(SIGCHLD);  // a worker's exit: not shown
    trace.signalReceived(15);
    trace.signalForwarded(15);
    trace.workerExited(2, 0, 100, 0, 15);
    trace.workersKilled();
    trace.restarted(1, 1);
    trace.workerExited(3, 1, 101, 7, 0);
    trace.jobEvent("node_lost", Args().add("node", "n2"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("agent0.jsonl")));
  const auto lines = readLines(dir.file("agent1.jsonl"));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0]["process"], "agent");
  EXPECT_EQ(lines[0]["rank"], -1);
  EXPECT_EQ(lines[0]["node_rank"], 1);
  EXPECT_EQ(lines[0]["world_size"], 4);
  EXPECT_THAT(namesOf(lines), ElementsAre("rendezvous", "worker_started", "signal_received",
                                          "signal_forwarded", "worker_exited", "workers_killed",
                                          "restart", "worker_exited", "node_lost"));
  EXPECT_EQ(lines[1]["ph"], "X");
  EXPECT_EQ(lines[1]["args"],
            nlohmann::json::parse(R"({"round":0,"world_size":4,"nodes":2,"node_rank":1})"));
  EXPECT_EQ(lines[2]["tid"], "launcher");
  EXPECT_EQ(lines[2]["args"],
            nlohmann::json::parse(R"({"rank":2,"local_rank":0,"pid":100,"restart":0})"));
  EXPECT_EQ(lines[5]["args"]["signal"], 15);
  EXPECT_FALSE(lines[5]["args"].contains("exit_code"));
  EXPECT_EQ(lines[8]["args"]["exit_code"], 7);
  EXPECT_TRUE(warnings.str().empty());
}

TEST(AgentTraceTest, AFolderThatCannotBeMadeStopsTheAgentAtOnce) {
  std::ostringstream warnings;
  try {
    AgentTrace trace(MapEnvironment{{"DISTRUN_TRACE", "/dev/null/t"}}, 0, warnings);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(),
                 "DISTRUN_TRACE (--trace) /dev/null/t: cannot create the folder: Not a directory");
  }
  EXPECT_THROW(
      AgentTrace(MapEnvironment{{"DISTRUN_TRACE", "t"}, {"DISTRUN_TRACE_STEPS", "x"}}, 0, warnings),
      UsageError);
}

}  // namespace
}  // namespace distrun::trace
