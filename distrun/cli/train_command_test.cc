// `distrun train`: where each argument goes (train_arguments.h), with the
// node agent replaced by a recorder, so nothing is launched.
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cli/cli.h"
#include "distrun/cli/train_arguments.h"
#include "distrun/common/error.h"
#include "distrun/launch/run_options.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Runs `distrun ARGS`; the agent records the flags it would run with.
struct TrainRun {
  ExitCode operator()(const std::vector<std::string>& args) {
    CliContext ctx{.env = env,
                   .out = out,
                   .err = err,
                   .hostFacts =
                       [] {
                         return HostFacts{"node1", 4};
                       },
                   .builtinSiteDir = "",
                   .exec = [](const auto&, const auto&) { ADD_FAILURE() << "exec"; },
                   .toolDir = "/opt/distrun/bin",
                   .runAgent =
                       [this](launch::RunOptions& o) {
                         launched = o;
                         return 0;
                       }};
    return static_cast<ExitCode>(runCli(args, ctx));
  }
  // The workers' command line after distrun-train.
  std::vector<std::string> workerArgs() const {
    if (!launched || launched->program.empty()) return {"<nothing launched>"};
    EXPECT_EQ(launched->program.front(), "/opt/distrun/bin/distrun-train");
    return {launched->program.begin() + 1, launched->program.end()};
  }

  // MNIST where `distrun train mnist` looks for it before it starts a rank.
  MapEnvironment env{{"DISTRUN_DATA", std::string(DISTRUN_SOURCE_DIR) + "/data/mnist"}};
  std::ostringstream out, err;
  std::optional<launch::RunOptions> launched;
};

TEST(TrainCommandTest, LauncherFlagsBeforeTheWorkload) {
  TrainRun run;
  EXPECT_EQ(run({"train", "--nproc-per-node", "2", "mnist", "--epochs", "1"}), ExitCode::kSuccess)
      << run.err.str();
  EXPECT_EQ(run.launched->nprocPerNode, "2");
  EXPECT_THAT(run.workerArgs(), ElementsAre("mnist", "--epochs", "1"));
}

TEST(TrainCommandTest, LauncherFlagsAfterTheWorkload) {
  TrainRun run;
  EXPECT_EQ(run({"train", "mnist", "--nproc-per-node", "2", "--epochs", "1"}), ExitCode::kSuccess)
      << run.err.str();
  EXPECT_EQ(run.launched->nprocPerNode, "2");
  EXPECT_THAT(run.workerArgs(), ElementsAre("mnist", "--epochs", "1"));
}

TEST(TrainCommandTest, LauncherAndTrainingFlagsMixedKeepTheirOrder) {
  TrainRun run;
  EXPECT_EQ(run({"train", "--max-restarts", "3", "--epochs", "2", "mnist", "--snapshot", "s.snap",
                 "--nproc-per-node", "2", "--deterministic", "--log-dir", "logs", "--lr", "-1"}),
            ExitCode::kSuccess)
      << run.err.str();
  EXPECT_EQ(run.launched->maxRestarts, 3);
  EXPECT_EQ(run.launched->nprocPerNode, "2");
  EXPECT_EQ(run.launched->logDir, "logs");
  EXPECT_THAT(run.workerArgs(), ElementsAre("mnist", "--epochs", "2", "--snapshot", "s.snap",
                                            "--deterministic", "--lr", "-1"));
}

TEST(TrainCommandTest, AttachedValuesAndTorchrunSpellings) {
  TrainRun run;
  EXPECT_EQ(run({"train", "linear", "--nproc_per_node=2", "--epochs=1", "-r3", "--standalone",
                 "--rdzv-conf=join_timeout=5"}),
            ExitCode::kSuccess)
      << run.err.str();
  EXPECT_EQ(run.launched->nprocPerNode, "2");
  EXPECT_EQ(run.launched->redirects, "3");
  EXPECT_TRUE(run.launched->standalone);
  EXPECT_EQ(run.launched->rdzvConf, "join_timeout=5");
  EXPECT_THAT(run.workerArgs(), ElementsAre("linear", "--epochs=1"));
}

// --trace and its companions, before or after the workload, become the
// DISTRUN_TRACE* variables of the agent and its workers; the folder is made.
TEST(TrainCommandTest, TraceFlagsBecomeTheJobsEnvironment) {
  std::string folder = (std::filesystem::temp_directory_path() / "distrun-trace-XXXXXX").string();
  ASSERT_NE(mkdtemp(folder.data()), nullptr);
  TrainRun run;
  EXPECT_EQ(run({"train", "--trace", folder + "/t/", "linear", "--trace-steps", "2:3", "--epochs",
                 "1", "--trace-max-mb", "5"}),
            ExitCode::kSuccess)
      << run.err.str();
  EXPECT_THAT(run.workerArgs(), ElementsAre("linear", "--epochs", "1"));
  EXPECT_EQ(run.launched->environment,
            (std::map<std::string, std::string>{{"DISTRUN_TRACE", folder + "/t/"},
                                                {"DISTRUN_TRACE_MAX_MB", "5"},
                                                {"DISTRUN_TRACE_STEPS", "2:3"}}));
  EXPECT_TRUE(std::filesystem::is_directory(folder + "/t"));
  std::filesystem::remove_all(folder);
  TrainRun untraced;
  EXPECT_EQ(untraced({"train", "linear"}), ExitCode::kSuccess) << untraced.err.str();
  EXPECT_TRUE(untraced.launched->environment.empty());
}

TEST(TrainCommandTest, AFolderOfTheTraceIsMadeAbsolute) {
  const std::string here = std::filesystem::current_path();
  std::string folder = here + "/distrun-trace-test-XXXXXX";
  ASSERT_NE(mkdtemp(folder.data()), nullptr);
  TrainRun run;
  const std::string relative = std::filesystem::path(folder).filename().string() + "/./t";
  EXPECT_EQ(run({"train", "--trace", relative, "linear"}), ExitCode::kSuccess) << run.err.str();
  EXPECT_EQ(run.launched->environment["DISTRUN_TRACE"], folder + "/t");
  std::filesystem::remove_all(folder);
}

TEST(TrainCommandTest, AfterDashDashEverythingIsTheWorkersAsGiven) {
  TrainRun run;
  EXPECT_EQ(run({"train", "--nproc-per-node", "2", "--", "linear", "--nproc-per-node", "3"}),
            ExitCode::kSuccess)
      << run.err.str();
  EXPECT_EQ(run.launched->nprocPerNode, "2");
  EXPECT_THAT(run.workerArgs(), ElementsAre("linear", "--nproc-per-node", "3"));
}

TEST(TrainCommandTest, HelpGoesByItsPlace) {
  TrainRun before;
  EXPECT_EQ(before({"train", "--help"}), ExitCode::kSuccess);
  EXPECT_FALSE(before.launched);
  EXPECT_THAT(before.out.str(), HasSubstr("--nproc-per-node"));
  EXPECT_THAT(before.out.str(), HasSubstr("which may also come after the workload"));
  // After the workload: distrun-train's flags, printed here (no worker
  // prints them with its rank's prefix) as `distrun train`'s.
  TrainRun after;
  EXPECT_EQ(after({"train", "mnist", "--help"}), ExitCode::kSuccess);
  EXPECT_FALSE(after.launched);
  EXPECT_THAT(after.out.str(), HasSubstr("Usage: distrun train [OPTIONS] workload"));
  EXPECT_THAT(after.out.str(), HasSubstr("--epochs"));
  EXPECT_THAT(after.out.str(), ::testing::Not(HasSubstr("distrun-train")));
  EXPECT_THAT(after.out.str(), ::testing::Not(HasSubstr("[0:0]")));
}

constexpr const char* kNeither =
    "train: unknown flag --frobnicate: neither a launcher flag ('distrun "
    "train --help') nor a training flag ('distrun train mnist --help')";

// The error is one line naming the flag, and comes before anything runs.
void expectRefused(const std::vector<std::string>& args, const std::string& message) {
  TrainRun run;
  EXPECT_EQ(run(args), ExitCode::kUsage);
  EXPECT_EQ(run.err.str(), "distrun: error: " + message + "\n");
  EXPECT_FALSE(run.launched) << "launched for an unknown flag";
}

TEST(TrainCommandTest, UnknownFlagAfterTheWorkloadIsRefusedBeforeLaunching) {
  expectRefused({"train", "mnist", "--nproc-per-node", "2", "--frobnicate"}, kNeither);
  expectRefused({"train", "mnist", "--frobnicate=1"}, kNeither);
  expectRefused({"train", "--frobnicate", "mnist"}, kNeither);
}

TEST(TrainCommandTest, AMisspelledFlagNamesTheNearestAndWhereItGoes) {
  expectRefused({"train", "mnist", "--nproc-per-nod", "2"},
                "train: unknown flag --nproc-per-nod: did you mean "
                "--nproc-per-node (a launcher flag)?");
  expectRefused({"train", "mnist", "--epoch", "2"},
                "train: unknown flag --epoch: did you mean --epochs (a training flag)?");
  expectRefused({"train", "mnist", "-epochs", "2"},
                "train: unknown flag -epochs: did you mean --epochs (a training flag)?");
}

TEST(TrainCommandTest, MissingValuesAndWorkloadsAreRefusedBeforeLaunching) {
  expectRefused({"train", "mnist", "--epochs"}, "train: training flag --epochs needs a value");
  expectRefused({"train", "mnist", "--log-dir", "--epochs", "1"},
                "train: launcher flag --log-dir needs a value");
  expectRefused({"train", "mnist", "linear"},
                "train: unexpected argument 'linear' after the workload mnist: distrun "
                "train [LAUNCHER FLAGS] WORKLOAD [TRAINING FLAGS] takes one workload");
  expectRefused({"train", "--nproc-per-node", "2", "--epochs", "1"},
                "train: expected a workload (mnist or linear) for the training "
                "flag --epochs");
  expectRefused({"train", "--nproc-per-node", "2"},
                "train: expected a workload (mnist or linear) after the launcher flags");
}

TEST(TrainArgumentsTest, AFlagBothSetsKnowIsRefused) {
  const FlagSet launcher = {{"--x", false}, {"--help", false}};
  const FlagSet training = {{"--x", true}, {"--help", false}};
  try {
    sortTrainArguments({"w", "--x"}, launcher, training);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "train: --x is both a launcher flag and a training flag: its "
                 "name cannot say where it goes");
  }
  const TrainArguments help = sortTrainArguments({"--help", "w", "--help"}, launcher, training);
  EXPECT_THAT(help.launcher, ElementsAre("--help"));
  EXPECT_THAT(help.training, ElementsAre("--help"));
}

// The rule that lets launcher flags follow the workload: the launcher's
// flags and distrun-train's share no name but help.
TEST(TrainArgumentsTest, LauncherAndTrainingFlagsShareOnlyHelp) {
  const FlagSet launcher = launcherFlagSet();
  const FlagSet training = trainingFlagSet();
  std::set<std::string> shared;
  for (const auto& [name, takesValue] : launcher) {
    if (training.count(name) != 0) shared.insert(name);
  }
  EXPECT_THAT(shared, ElementsAre("--help", "-h"));
  EXPECT_TRUE(launcher.at("--nproc-per-node"));
  EXPECT_TRUE(launcher.at("--nproc_per_node"));
  EXPECT_FALSE(launcher.at("--standalone"));
  EXPECT_TRUE(launcher.at("-r"));
  EXPECT_TRUE(training.at("--epochs"));
  EXPECT_FALSE(training.at("--deterministic"));
  EXPECT_EQ(training.count("workload"), 0u);
}

TEST(TrainCommandTest, HelpNamesTheWorkloadsSources) {
  TrainRun run;
  EXPECT_EQ(run({"--help"}), ExitCode::kSuccess);
  EXPECT_THAT(run.out.str(), HasSubstr("mnist: PyTorch's MNIST example network; linear: the "
                                       "PyTorch DDP tutorial's Trainer"));
  EXPECT_THAT(run.out.str(), ::testing::Not(HasSubstr("seed")));
}

}  // namespace
}  // namespace distrun::cli
