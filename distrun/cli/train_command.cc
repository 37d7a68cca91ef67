#include <unistd.h>

#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "distrun/cli/commands.h"
#include "distrun/cli/trace_flags.h"
#include "distrun/cli/train_arguments.h"
#include "distrun/common/error.h"
#include "distrun/common/writable_file.h"
#include "distrun/data/mnist_files.h"
#include "distrun/train_app/train_flags.h"

namespace distrun::cli {

namespace {

// What this host can tell of a --snapshot or --metrics file before any
// worker starts; rank 0 checks again with the model's size (Trainer).
constexpr uint64_t kOutputBytesBeforeLaunch = uint64_t{1} << 20;

void checkOutputFiles(const train::TrainFlags& flags) {
  if (!flags.snapshot.empty()) {
    checkFileWritable(flags.snapshot, "--snapshot", kOutputBytesBeforeLaunch);
  }
  if (!flags.metrics.empty()) {
    checkFileWritable(flags.metrics, "--metrics", kOutputBytesBeforeLaunch);
  }
}

// The training program every rank runs, beside distrun: a distrun built
// without the training runtime (-DDISTRUN_TRAIN=OFF), or installed from
// the packages without distrun-train, has none, and says so before
// anything starts (exit 127, as a shell for a missing program).
void checkTrainingProgram(const std::string& program) {
  if (::access(program.c_str(), X_OK) != 0) {
    throw Error(ExitCode::kNotFound,
                fmt::format("train: no training runtime: {} is missing (install the package "
                            "distrun-train, or build distrun with -DDISTRUN_TRAIN=ON)",
                            program));
  }
}

// distrun-train's flags (`args`: WORKLOAD and its flags) as `distrun train`
// sees them before launching: their help, printed here as `distrun train`'s
// (no worker starts for it: returns 0), values CLI11 must convert, the
// checks of train::checkTrainFlags, and the files the run will write
// (unless ctx.checkOnly: they are written where the job runs).
// Arguments it does not know (only after `--`: sortTrainArguments refuses
// them elsewhere) are left to distrun-train, as given.
std::optional<int> checkTraining(const std::vector<std::string>& args,
                                 const launch::RunOptions& launcher, CliContext& ctx) {
  CLI::App app(fmt::format("distrun train {}: the training flags (docs/training.md); the "
                           "launcher flags: 'distrun train --help'",
                           args.front()),
               "distrun train");
  train::TrainFlags flags;
  train::addTrainFlags(app, flags);
  app.allow_extras();
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) {
      throw UsageError(
          fmt::format("train: {} (see 'distrun train {} --help')", e.what(), args.front()));
    }
    app.exit(e, ctx.out, ctx.err);
    return 0;
  }
  train::checkTrainFlags(flags);
  if (ctx.checkOnly) return std::nullopt;
  checkOutputFiles(flags);
  // The ranks read MNIST where this runs, unless inside an image.
  if (flags.workload == "mnist" && !launcher.container.image) {
    data::checkMnistFolder(train::mnistFolder(flags, ctx.env));
  }
  return std::nullopt;
}

}  // namespace

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
  auto trace = std::make_shared<TraceFlags>();
  CLI::App* cmd =
      app.add_subcommand("train",
                         "Built-in training workloads (mnist: PyTorch's MNIST example network; "
                         "linear: the PyTorch DDP tutorial's Trainer), data-parallel over "
                         "--nproc-per-node local ranks and every node of the job, launched and "
                         "supervised as by 'distrun run'");
  addLauncherFlags(cmd, *options, *ignored);
  addTraceFlags(cmd, *trace);
  cmd->prefix_command();
  cmd->footer(
      "WORKLOAD [TRAINING FLAGS...] follow the launcher flags, which may also "
      "come after the workload; 'distrun train mnist --help' lists the "
      "training flags (docs/training.md)");
  return [options, ignored, trace, cmd, &ctx] {
    const std::vector<std::string> training = cmd->remaining();
    if (training.empty()) {
      throw UsageError(
          "train: expected a workload (mnist or linear) after the launcher "
          "flags");
    }
    if (std::optional<int> helped = checkTraining(training, *options, ctx)) return *helped;
    if (ctx.checkOnly) return 0;
    options->environment = traceVariables(*trace);
    options->program = {ctx.toolDir + "/distrun-train"};
    // (A test's runAgent starts nothing: it has no program to find.)
    if (!ctx.runAgent) checkTrainingProgram(options->program.front());
    options->program.insert(options->program.end(), training.begin(), training.end());
    return launchAgent(*options, ctx);
  };
}

}  // namespace distrun::cli
