// `distrun trace merge` through the command line (its mistakes are rows of
// mistakes_test.cc): the trace written, notes and the summary on stderr.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/cli/cli.h"
#include "distrun/common/environment.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::cli {
namespace {

using ::testing::HasSubstr;

const std::string kTwoRanks =
    std::string(DISTRUN_SOURCE_DIR) + "/distrun/trace_merge/testdata/two_ranks";

struct TraceCli {
  int operator()(const std::vector<std::string>& args) {
    CliContext ctx{.env = env,
                   .out = out,
                   .err = err,
                   .hostFacts = readHostFacts,
                   .builtinSiteDir = "",
                   .exec = {},
                   .toolDir = ""};
    return runCli(args, ctx);
  }
  MapEnvironment env;
  std::ostringstream out, err;
};

TEST(TraceCommandTest, MergeWritesTheTraceAndSaysWhatItHolds) {
  const std::string output =
      ::testing::TempDir() + "trace_command_" + std::to_string(::getpid()) + ".json";
  TraceCli cli;
  ASSERT_EQ(cli({"trace", "merge", kTwoRanks, "-o", output}), 0) << cli.err.str();
  EXPECT_EQ(cli.out.str(), "");
  EXPECT_EQ(cli.err.str(), "distrun: trace merge: wrote " + output +
                               ": 2 ranks, 1 launcher, 0 PyTorch exports, 25 events; 2 collective "
                               "pairs linked, 0 with a side missing\n");
  std::ifstream in(output);
  nlohmann::json trace = nlohmann::json::parse(in);
  EXPECT_EQ(trace["otherData"]["flows"]["pairs"], 2);
  std::filesystem::remove(output);
}

TEST(TraceCommandTest, NotesComeBeforeTheSummary) {
  const std::string dir =
      ::testing::TempDir() + "trace_command_notes_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy(kTwoRanks, dir);
  std::ofstream(dir + "/rank1.jsonl", std::ios::app) << "{\"name\":\"cut";
  TraceCli cli;
  ASSERT_EQ(cli({"trace", "merge", dir}), 0) << cli.err.str();
  EXPECT_THAT(cli.err.str(), HasSubstr("distrun: trace merge: " + dir +
                                       "/rank1.jsonl: dropped line 15, which is not whole (the "
                                       "process was killed while writing it?)\ndistrun: trace "
                                       "merge: wrote " +
                                       dir + "/trace.json: "));
  EXPECT_TRUE(std::filesystem::exists(dir + "/trace.json"));
  std::filesystem::remove_all(dir);
}

TEST(TraceCommandTest, MergeHelpNamesItsFlag) {
  TraceCli cli;
  EXPECT_EQ(cli({"trace", "merge", "--help"}), 0);
  EXPECT_THAT(cli.out.str(), HasSubstr("default: DIR/trace.json"));
}

}  // namespace
}  // namespace distrun::cli
