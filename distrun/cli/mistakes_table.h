#pragma once

// The table of user mistakes (mistakes_test.cc, environment_mistakes_test.cc,
// bench_mistakes_test.cc):
// every mistake on distrun's command line, or in the environment it reads,
// is one line on stderr, its documented exit code (64 for the command line
// unless a row says otherwise), and nothing started: no exec, no node agent,
// no benchmark rank, no sbatch.
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cli/cli.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/launch/run_options.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::cli {

struct Mistake {
  std::vector<std::string> args;
  std::string message;  // after "distrun: error: "
  bool prefixOnly = false;
  std::vector<std::pair<std::string, std::string>> env = {};  // the user's environment
  ExitCode code = ExitCode::kUsage;
};

inline std::ostream& operator<<(std::ostream& os, const Mistake& m) {
  for (const std::string& a : m.args) os << a << " ";
  return os;
}

// `distrun ARGS`, with exec and the node agent recording that they ran.
struct Recorder {
  ExitCode operator()(const std::vector<std::string>& args) {
    CliContext ctx{.env = env,
                   .out = out,
                   .err = err,
                   .hostFacts =
                       [] {
                         return HostFacts{"node1", 4};
                       },
                   .builtinSiteDir = std::string(DISTRUN_SOURCE_DIR) + "/share/sites",
                   .exec = [this](const auto&, const auto&) { started = "exec"; },
                   .toolDir = "/opt/distrun/bin",
                   .runAgent =
                       [this](launch::RunOptions&) {
                         started = "agent";
                         return 0;
                       },
                   .runTool =
                       [this](const std::vector<std::string>& argv, const std::string&) {
                         started = argv.front();
                         return ToolResult{0, "1\n", ""};
                       },
                   .wrapImage =
                       [this](const container::WrapOptions&) {
                         started = "wrap";
                         return 0;
                       },
                   .runContained =
                       [this](const auto&, const auto&, const auto&, bool) {
                         started = "container";
                         return 0;
                       }};
    return static_cast<ExitCode>(runCli(args, ctx));
  }

  // MNIST where `distrun train mnist` looks for it before it starts a rank.
  MapEnvironment env{{"DISTRUN_DATA", std::string(DISTRUN_SOURCE_DIR) + "/data/mnist"}};
  std::ostringstream out, err;
  std::string started;
};

inline void expectOneLine(const std::string& err, const std::string& prefix, const Mistake& m) {
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "more than one line: " << err;
  const std::string expected = prefix + m.message;
  if (m.prefixOnly) {
    EXPECT_THAT(err, ::testing::StartsWith(expected));
  } else {
    EXPECT_EQ(err, expected + "\n");
  }
}

class DistrunMistakeTest : public ::testing::TestWithParam<Mistake> {};

}  // namespace distrun::cli
