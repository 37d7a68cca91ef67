#pragma once

// What a command does with an argument that starts with '-' but is none of
// its flags: one usage error naming it, with the nearest flag the command
// has, before anything starts.
#include <string>
#include <vector>

#include "distrun/cli/cli.h"
#include "distrun/cli/train_arguments.h"

namespace CLI {
class App;
}  // namespace CLI

namespace distrun::cli {

// The long names of `flags` ("--nproc-per-node", not "-r"): what a
// suggestion may name.
std::vector<std::string> longNames(const FlagSet& flags);

// "run: unknown flag --max-restart: did you mean --max-restarts?", or
// without a close name "exec: unknown flag -x (see 'distrun exec --help')".
// A subcommand's message names the path to it ("trace merge: ... (see
// 'distrun trace merge --help')"). `arg` may carry its value ("--x=1"); the
// message names the flag.
std::string unknownFlagMessage(const CLI::App& cmd, const std::string& arg);

// PROGRAM [ARGS...] of `cmd` (run, exec, train): what the parser left,
// without a leading "--". The parser takes every flag it knows, so an
// argument before PROGRAM that starts with '-' is one it does not: throws
// UsageError (unknownFlagMessage).
std::vector<std::string> programArguments(const CLI::App& cmd);

// The arguments the parser left of a command that takes no PROGRAM
// (hostnames' HOSTLIST...): throws UsageError for the first one that
// starts with '-'.
std::vector<std::string> argumentsWithoutFlags(const CLI::App& cmd);

// For `exec|run|submit [OPTIONS] -- PROGRAM [ARGS...]`: removes `-- PROGRAM
// [ARGS...]` from `args` and returns PROGRAM [ARGS...]; `app` declares the
// commands, whose flags say which arguments are values. The parser would
// otherwise take what follows `--` as its own positionals. Empty for any
// other command line (no `--` before PROGRAM). submit's first `--` is
// found past anything else (`--mem 480G -- run x.py`), for its parser to
// name what it does not know.
std::vector<std::string> splitProgram(std::vector<std::string>& args, const CLI::App& app);

// How a command that execs a sibling program (distrun-doctor,
// distrun-bench) is checked without running it (ctx.checkOnly): `argv`
// plus `checkFlag` (the program's --list or --dry-run, which checks every
// flag and starts nothing) through ctx.runTool. A refusal is thrown with
// the program's exit code and its line, `command` before it ("doctor: ...").
void checkFlagsBy(const std::vector<std::string>& argv, const std::string& checkFlag,
                  const std::string& command, CliContext& ctx);

}  // namespace distrun::cli
