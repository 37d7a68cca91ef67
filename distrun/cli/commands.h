#pragma once

// The subcommands of `distrun`, one file each. Each add* function declares
// the subcommand's flags on `app` and returns the action to run when the
// subcommand was chosen.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "distrun/cli/cli.h"
#include "distrun/launch/run_options.h"

namespace distrun::cli {

// Runs the chosen subcommand; returns the process's exit status.
using Action = std::function<int()>;

Action addHostnamesCommand(CLI::App& app, CliContext& ctx);
Action addEnvCommand(CLI::App& app, CliContext& ctx);
// `program` is what followed `--` on the command line (splitProgram);
// when empty, PROGRAM is the first argument that is not an option.
Action addExecCommand(CLI::App& app, CliContext& ctx, const std::vector<std::string>& program);
Action addRunCommand(CLI::App& app, CliContext& ctx, const std::vector<std::string>& program);
// `program` is the distrun command after `--` (splitProgram).
Action addSubmitCommand(CLI::App& app, CliContext& ctx, const std::vector<std::string>& program);
// `distrun wrap -o IMAGE ...`: builds a container image (docs/containers.md).
Action addWrapCommand(CLI::App& app, CliContext& ctx);

// `distrun enter [--bind ...] IMAGE -- PROGRAM [ARGS...]`: PROGRAM inside the
// container IMAGE with this environment; returns its status.
Action addEnterCommand(CLI::App& app, CliContext& ctx);
// `distrun plot ...`: a figure of metrics or a trace, drawn by gnuplot
// through ctx.runTool (distrun/plot/plot.h).
Action addPlotCommand(CLI::App& app, CliContext& ctx);
// `distrun bench ...`: execs distrun-bench from ctx.toolDir with the
// arguments unchanged; with ctx.checkOnly, runs it with --dry-run instead
// (ctx.runTool) and throws its error.
Action addBenchCommand(CLI::App& app, CliContext& ctx);

// `distrun doctor ...`: execs distrun-doctor from ctx.toolDir with the
// arguments unchanged (docs/doctor.md); with ctx.checkOnly, runs it with
// --list instead (ctx.runTool), which checks the arguments and starts no
// check, and throws its error.
Action addDoctorCommand(CLI::App& app, CliContext& ctx);

// `distrun trace merge DIR [-o FILE]`: a trace folder merged into one
// Chrome/Perfetto trace (docs/observability.md).
Action addTraceCommand(CLI::App& app, CliContext& ctx);

// `distrun train [LAUNCHER FLAGS] WORKLOAD [TRAINING FLAGS]`: `distrun run`
// with ctx.toolDir/distrun-train as the program. Launcher flags may also
// follow WORKLOAD: sortTrainCommandLine puts them first before the parse.
// Before launching it prints distrun-train's --help itself, and refuses
// training values distrun-train would refuse (UsageError) and --snapshot
// or --metrics files this host cannot write (IoError, checkFileWritable).
Action addTrainCommand(CLI::App& app, CliContext& ctx);
// For `train ...`: the same arguments with the launcher's flags first,
// then WORKLOAD and distrun-train's flags (sortTrainArguments, which
// throws UsageError for a flag neither knows). Any other command line as
// it is.
std::vector<std::string> sortTrainCommandLine(const std::vector<std::string>& args);

// The flags of `distrun run` (torchrun's and distrun's own), and the node
// agent they configure; shared by `run` and `train`.
void addLauncherFlags(CLI::App* cmd, launch::RunOptions& o, std::string& ignored);
// The node agent of `o`, or a test's ctx.runAgent: every check of the
// flags (launch::checkRunOptions with the scheduler's layout, the bind
// flags, the container) made before anything starts, so a mistake starts
// nothing; run and train end with it.
int launchAgent(launch::RunOptions& o, CliContext& ctx);

}  // namespace distrun::cli
