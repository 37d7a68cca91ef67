#include <memory>
#include <string>

#include "distrun/cli/commands.h"
#include "distrun/cli/train_arguments.h"
#include "distrun/common/error.h"

namespace distrun::cli {

std::vector<std::string> sortTrainCommandLine(const std::vector<std::string>& args) {
  if (args.empty() || args.front() != "train") return args;
  const TrainArguments sorted =
      sortTrainArguments({args.begin() + 1, args.end()}, launcherFlagSet(), trainingFlagSet());
  std::vector<std::string> line = {"train"};
  line.insert(line.end(), sorted.launcher.begin(), sorted.launcher.end());
  if (sorted.workload.empty()) return line;
  line.push_back(sorted.workload);
  line.insert(line.end(), sorted.training.begin(), sorted.training.end());
  return line;
}

Action addTrainCommand(CLI::App& app, CliContext& ctx) {
  auto options = std::make_shared<launch::RunOptions>();
  auto ignored = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("train",
                         "Built-in training workloads (mnist: PyTorch's MNIST example network; "
                         "linear: the PyTorch DDP tutorial's Trainer), data-parallel over "
                         "--nproc-per-node local ranks and every node of the job, launched and "
                         "supervised as by 'distrun run'");
  addLauncherFlags(cmd, *options, *ignored);
  cmd->prefix_command();
  cmd->footer(
      "WORKLOAD [TRAINING FLAGS...] follow the launcher flags, which may also "
      "come after the workload; 'distrun train mnist --help' lists the "
      "training flags (docs/training.md)");
  return [options, ignored, cmd, &ctx] {
    options->program = {ctx.toolDir + "/distrun-train"};
    for (const std::string& a : cmd->remaining()) options->program.push_back(a);
    if (options->program.size() == 1) {
      throw UsageError(
          "train: expected a workload (mnist or linear) after the launcher "
          "flags");
    }
    checkLauncherFlags(*options, ctx);
    return ctx.runAgent ? ctx.runAgent(*options) : runLauncher(*options, ctx);
  };
}

}  // namespace distrun::cli
