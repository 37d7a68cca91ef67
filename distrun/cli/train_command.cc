#include <memory>
#include <string>

#include "distrun/cli/commands.h"
#include "distrun/common/error.h"

namespace distrun::cli {

Action addTrainCommand(CLI::App& app, CliContext& ctx) {
  auto options = std::make_shared<launch::RunOptions>();
  auto ignored = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Built-in training workloads (mnist: the seeds' CNN; linear: the seeds' "
      "trainer), data-parallel over --nproc-per-node local ranks and every node "
      "of the job, launched and supervised as by 'distrun run'");
  addLauncherFlags(cmd, *options, *ignored);
  cmd->prefix_command();
  cmd->footer(
      "WORKLOAD [TRAINING FLAGS...] follow the launcher flags; "
      "'distrun train mnist --help' lists the training flags (docs/training.md)");
  return [options, ignored, cmd, &ctx] {
    options->program = {ctx.toolDir + "/distrun-train"};
    for (const std::string& a : cmd->remaining()) options->program.push_back(a);
    if (options->program.size() == 1) {
      throw UsageError("train: expected a workload (mnist or linear) after the launcher flags");
    }
    return runLauncher(*options, ctx);
  };
}

}  // namespace distrun::cli
