#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distrun/binding/node_topology.h"
#include "distrun/common/environment.h"
#include "distrun/common/exit_code.h"
#include "distrun/common/system.h"
#include "distrun/common/tool_process.h"

namespace distrun::launch {
struct RunOptions;
}  // namespace distrun::launch

namespace distrun::submit {
struct WatchRequest;
}  // namespace distrun::submit

namespace distrun::container {
struct WrapOptions;
struct ContainerRequest;
}  // namespace distrun::container

namespace distrun::cli {

// Replaces the current process with `argv`, after setting `variables` in
// its environment. Returns only by throwing (SystemError with kNotFound or
// kNotExecutable).
using ExecFunction =
    std::function<void(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& variables)>;

// Everything the `distrun` command reads from or does to the world, so its
// subcommands run in tests against maps and string streams.
struct CliContext {
  const Environment& env;
  std::ostream& out;
  std::ostream& err;
  std::function<HostFacts()> hostFacts = readHostFacts;
  // Directory of the built-in site profiles (share/distrun/sites).
  std::string builtinSiteDir;
  ExecFunction exec;
  // Directory of distrun's sibling binaries (distrun-bench).
  std::string toolDir;
  // Runs the node agent of `distrun run` and `distrun train` with their
  // parsed flags and returns the job's status; tests record the flags
  // instead. Empty: the real agent.
  std::function<int(launch::RunOptions&)> runAgent = {};
  // Runs a Slurm client command (sbatch, squeue, scontrol, scancel) with its
  // standard input: `distrun submit`; gnuplot: `distrun plot`.
  std::function<ToolResult(const std::vector<std::string>&, const std::string&)> runTool =
      distrun::runTool;
  // Follows a submitted job (`submit --wait`) and returns its exit code;
  // tests record the request instead. Empty: the real follower (squeue,
  // the output file, Ctrl-C).
  std::function<int(const submit::WatchRequest&)> watchJob = {};
  // Builds the image `distrun wrap` checked and returns the exit status;
  // tests record the options instead. Empty: the real build.
  std::function<int(const container::WrapOptions&)> wrapImage = {};
  // Runs a program inside a checked --container with variables added to
  // the environment, waits, and returns its status (exec, enter, bench);
  // tests record the request instead. The real one: cli::runContained.
  std::function<int(const container::ContainerRequest&, const std::vector<std::string>& program,
                    const std::vector<std::pair<std::string, std::string>>& variables,
                    bool verbose)>
      runContained = {};
  // Parse and check the command line and start nothing: how `distrun
  // submit` checks its job's commands before sbatch (checkCommandLine).
  bool checkOnly = false;
  // Started through a link named torchrun (apps/distrun/main.cc): `run`,
  // whose PROGRAM runs under Python unless --no-python, as torchrun's does.
  bool asTorchrun = false;
  // This node's topology, read once a command: `distrun run` checks its
  // flags against it before the agent starts, and the agent plans on the
  // same value (run_command.cc). Unset until first read.
  std::optional<binding::NodeTopology> nodeTopology = std::nullopt;
};

// Runs `distrun ARGS...` (args excludes the program name) and returns the
// exit status. Every error is printed to ctx.err as one line, `distrun:
// error: ...`, and mapped to its ExitCode; --help prints to ctx.out and
// returns 0. `distrun run` returns its job's status (a worker's code).
int runCli(const std::vector<std::string>& args, CliContext& ctx);

// `distrun ARGS...` parsed and checked as runCli would, with nothing
// started (ctx.checkOnly): the flags of the command and of distrun-train,
// and those of distrun-doctor and distrun-bench, through their --list and
// --dry-run (checkFlagsBy). What depends on the job's
// nodes (the scheduler's layout, the files the run writes) is left to the
// job. Throws the error runCli would print.
void checkCommandLine(const std::vector<std::string>& args, const CliContext& ctx);

// The real ExecFunction: setenv each variable, then execvp.
void execProgram(const std::vector<std::string>& argv,
                 const std::vector<std::pair<std::string, std::string>>& variables);

// share/distrun/sites relative to the running executable (bin/../share/...).
std::string builtinSiteDirFor(const std::string& executable);

}  // namespace distrun::cli
