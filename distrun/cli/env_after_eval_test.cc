// A shell that ran `eval "$(distrun env)"`: later commands treat what it
// left as left over, not as the user's intent (issue 32, item 3).
#include <algorithm>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/cli/cli.h"
#include "distrun/cluster/leftovers.h"
#include "distrun/common/strings.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::cli {
namespace {

using ::testing::HasSubstr;
using Vars = std::map<std::string, std::string>;

// `distrun ARGS` on a host with 4 CPUs, against `env`.
struct Shell {
  int operator()(const std::vector<std::string>& args) {
    out.str("");
    err.str("");
    CliContext ctx{.env = env,
                   .out = out,
                   .err = err,
                   .hostFacts =
                       [] {
                         return HostFacts{"node1", 4};
                       },
                   .builtinSiteDir = std::string(DISTRUN_SOURCE_DIR) + "/share/sites",
                   .exec = [this](const auto&, const auto& vars) { execVars = vars; },
                   .toolDir = "/opt/distrun/bin"};
    return runCli(args, ctx);
  }
  std::string execValue(const std::string& name) const {
    for (const auto& [n, v] : execVars) {
      if (n == name) return v;
    }
    return "<unset>";
  }

  MapEnvironment env;
  std::ostringstream out, err;
  std::vector<std::pair<std::string, std::string>> execVars;
};

// What `eval` of `sh` does to `env`: each `export NAME=VALUE` line, VALUE
// plain or single-quoted as shellQuote writes it.
void evaluate(const std::string& sh, MapEnvironment& env) {
  for (const std::string& line : split(sh, '\n')) {
    if (!line.starts_with("export ")) continue;
    const size_t eq = line.find('=');
    const std::string name = line.substr(7, eq - 7);
    std::string rest = line.substr(eq + 1);
    std::string value;
    if (rest.starts_with("'")) {
      value = rest.substr(1, rest.find('\'', 1) - 1);  // no quotes inside in these tests
    } else {
      value = rest.substr(0, rest.find(' '));
    }
    env.set(name, value);
  }
}

// A plain shell on the 4-CPU host after `eval "$(distrun env --site none)"`.
Shell evaluatedShell() {
  Shell shell;
  shell.env.set("HOME", "/home/me");
  EXPECT_EQ(shell({"env", "--site", "none"}), 0) << shell.err.str();
  evaluate(shell.out.str(), shell.env);
  return shell;
}

// Rank `rank` of `mpirun -np 2` on this host, started from `shell`.
void underMpirun(Shell& shell, int rank) {
  shell.env.set("OMPI_COMM_WORLD_RANK", std::to_string(rank));
  shell.env.set("OMPI_COMM_WORLD_SIZE", "2");
  shell.env.set("OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank));
  shell.env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  shell.env.set("OMPI_MCA_ess_base_jobid", "77");
}

TEST(EnvAfterEvalTest, EnvExportsAMarkerOfWhatItSetButNotOfWhatItKept) {
  Shell shell;
  shell.env.set("OMP_NUM_THREADS", "3");
  ASSERT_EQ(shell({"env", "--site", "none"}), 0);
  MapEnvironment after;
  evaluate(shell.out.str(), after);
  const std::string marker = after.getOr(cluster::kEnvMarker, "");
  EXPECT_THAT(marker, HasSubstr("RANK:"));
  EXPECT_THAT(marker, HasSubstr("MASTER_PORT:"));
  EXPECT_THAT(marker, ::testing::Not(HasSubstr("OMP_NUM_THREADS")));
  EXPECT_EQ(after.getOr("OMP_NUM_THREADS", ""), "3");
}

TEST(EnvAfterEvalTest, EnvAgainPrintsWhatAFreshShellGetsAndNotesTheLeftovers) {
  Shell shell = evaluatedShell();
  ASSERT_EQ(shell({"env", "--site", "none"}), 0) << shell.err.str();
  EXPECT_THAT(shell.out.str(), ::testing::Not(HasSubstr("# kept")));
  EXPECT_THAT(shell.out.str(), HasSubstr("# note: ignoring RANK LOCAL_RANK WORLD_SIZE"));
  EXPECT_EQ(shell.err.str(), "");
}

// `mpirun -np 2 distrun exec` after the eval: the ranks' threads are
// derived per rank (4 CPUs over 2 ranks), not the eval's 4.
TEST(EnvAfterEvalTest, ExecUnderMpirunDerivesThreadsPerRank) {
  Shell shell = evaluatedShell();
  EXPECT_EQ(shell.env.getOr("OMP_NUM_THREADS", ""), "4");
  underMpirun(shell, 1);
  ASSERT_EQ(shell({"exec", "--", "true"}), 0) << shell.err.str();
  EXPECT_EQ(shell.execValue("OMP_NUM_THREADS"), "2");
  EXPECT_EQ(shell.execValue("RANK"), "1");
  EXPECT_EQ(shell.execValue("MASTER_ADDR"), "127.0.0.1");
  // The port derived from mpirun's job id, not the one the eval picked.
  EXPECT_NE(shell.execValue("MASTER_PORT"), shell.env.getOr("MASTER_PORT", ""));
  EXPECT_EQ(shell.execValue(cluster::kEnvMarker), "");
  EXPECT_EQ(shell.err.str(), "") << "a note only with -v";
}

TEST(EnvAfterEvalTest, AThreadCountTheUserSetAfterTheEvalIsKept) {
  Shell shell = evaluatedShell();
  shell.env.set("OMP_NUM_THREADS", "3");
  underMpirun(shell, 0);
  ASSERT_EQ(shell({"exec", "--", "true"}), 0) << shell.err.str();
  EXPECT_EQ(shell.execValue("OMP_NUM_THREADS"), "3");
}

TEST(EnvAfterEvalTest, ExecVerboseSaysWhatItIgnoredInOneLine) {
  Shell shell = evaluatedShell();
  ASSERT_EQ(shell({"exec", "-v", "--", "true"}), 0) << shell.err.str();
  const std::string first = split(shell.err.str(), '\n').front();
  EXPECT_THAT(first, ::testing::StartsWith("distrun exec: note: ignoring RANK LOCAL_RANK"));
  EXPECT_THAT(first, HasSubstr("OMP_NUM_THREADS"));
  EXPECT_THAT(first, HasSubstr("left by an earlier eval \"$(distrun env)\""));
}

// RANK changed after the eval is the user's; the WORLD_SIZE the eval left
// is not: an error that says what it is and how to clear it.
TEST(EnvAfterEvalTest, AChangedRankIsTheUsersAndIsChecked) {
  Shell shell = evaluatedShell();
  shell.env.set("RANK", "3");
  EXPECT_EQ(shell({"exec", "--", "true"}), toInt(ExitCode::kConfig));
  EXPECT_EQ(shell.err.str(),
            "distrun: error: RANK=3 is set but WORLD_SIZE is not; if left from an earlier shell "
            "or job, clear them: eval \"$(distrun env --unset)\"\n");
}

TEST(EnvUnsetTest, PrintsOneUnsetOfThePlacementVariablesSet) {
  Shell shell = evaluatedShell();
  shell.env.set("SLURM_PROCID", "1");
  ASSERT_EQ(shell({"env", "--unset"}), 0) << shell.err.str();
  const std::string out = shell.out.str();
  EXPECT_THAT(out, ::testing::StartsWith("unset RANK LOCAL_RANK WORLD_SIZE"));
  EXPECT_THAT(out, HasSubstr(" SLURM_PROCID "));
  EXPECT_THAT(out, HasSubstr(" OMP_NUM_THREADS "));
  EXPECT_THAT(out, ::testing::EndsWith(" DISTRUN_ENV_SET\n"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
  Shell clean;
  ASSERT_EQ(clean({"env", "--unset"}), 0);
  EXPECT_EQ(clean.out.str(),
            "# distrun env --unset: none of the variables that place a task is set\n");
}

}  // namespace
}  // namespace distrun::cli
