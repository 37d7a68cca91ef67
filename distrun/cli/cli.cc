#include "distrun/cli/cli.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <ostream>

#include <fmt/format.h>

#include "distrun/cli/build_info.h"
#include "distrun/cli/commands.h"
#include "distrun/cli/flag_check.h"
#include "distrun/common/command_line.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::cli {

namespace {

constexpr const char* kDescription =
    "distrun: launch data-parallel training on one machine or a Slurm "
    "cluster. See docs/ for every command.";

ExitCode reportError(const std::exception& e, CliContext& ctx) {
  ctx.err << kErrorPrefix << e.what() << "\n";
  return exitCodeFor(e);
}

// `distrun --x ...`: the flags of the commands follow them.
UsageError unknownFlagBeforeCommand(const std::string& arg) {
  const std::string name = arg.substr(0, arg.find('='));
  if (auto known = closestName(name, {"--help", "--version"})) {
    return UsageError(fmt::format("unknown flag {}: did you mean {}?", name, *known));
  }
  return UsageError(fmt::format(
      "unknown flag {} before the command: flags follow it (distrun COMMAND [FLAGS...])", name));
}

UsageError unknownCommand(const std::string& name, const std::vector<std::string>& commands) {
  if (auto known = closestName(name, commands)) {
    return UsageError(fmt::format("unknown command '{}' (did you mean '{}'?)", name, *known));
  }
  return UsageError(
      fmt::format("unknown command '{}': expected one of {}", name, join(commands, ", ")));
}

// The first argument names the command: one of `commands`, or --help or
// --version. Throws UsageError naming it otherwise, with the nearest name.
void checkCommandName(const std::vector<std::string>& args,
                      const std::vector<std::string>& commands) {
  if (args.empty()) {
    throw UsageError(
        fmt::format("expected a command: {} (see 'distrun --help')", join(commands, ", ")));
  }
  const std::string& first = args.front();
  if (first == "-h" || first == "--help" || first == "--version") return;
  if (std::find(commands.begin(), commands.end(), first) != commands.end()) return;
  if (looksLikeFlag(first)) throw unknownFlagBeforeCommand(first);
  throw unknownCommand(first, commands);
}

// Each command's name and how it adds itself (its flags) to the app.
using AddCommand = std::function<Action(CLI::App&)>;
std::vector<std::pair<std::string, AddCommand>> commandTable(CliContext& ctx,
                                                             std::vector<std::string>& program) {
  return {
      {"hostnames", [&](CLI::App& a) { return addHostnamesCommand(a, ctx); }},
      {"env", [&](CLI::App& a) { return addEnvCommand(a, ctx); }},
      {"exec", [&](CLI::App& a) { return addExecCommand(a, ctx, program); }},
      {"run", [&](CLI::App& a) { return addRunCommand(a, ctx, program); }},
      {"bench", [&](CLI::App& a) { return addBenchCommand(a, ctx); }},
      {"doctor", [&](CLI::App& a) { return addDoctorCommand(a, ctx); }},
      {"train", [&](CLI::App& a) { return addTrainCommand(a, ctx); }},
      {"submit", [&](CLI::App& a) { return addSubmitCommand(a, ctx, program); }},
      {"wrap", [&](CLI::App& a) { return addWrapCommand(a, ctx); }},
      {"enter", [&](CLI::App& a) { return addEnterCommand(a, ctx); }},
      {"trace", [&](CLI::App& a) { return addTraceCommand(a, ctx); }},
      {"plot", [&](CLI::App& a) { return addPlotCommand(a, ctx); }},
  };
}

// Parses `args` and runs the chosen command's action; throws every error,
// a parse error as UsageError naming the command's --help. Only the named
// command's flags are made (all of them for `distrun --help`): making the
// twelve commands' flags took 0.55 ms of a 7 ms start (bench/launch.sh).
int parseAndAct(std::vector<std::string> args, CliContext& ctx) {
  std::vector<std::string> program;  // after --, for exec and run
  CLI::App app(kDescription, "distrun");
  app.set_version_flag("--version", versionText(thisBuild()));
  app.require_subcommand(1);
  std::vector<std::string> commands;
  const std::vector<std::pair<std::string, AddCommand>> table = commandTable(ctx, program);
  for (const auto& [name, add] : table) commands.push_back(name);
  checkCommandName(args, commands);
  std::vector<std::pair<std::string, Action>> actions;
  for (const auto& [name, add] : table) {
    if (name == args.front() || !std::count(commands.begin(), commands.end(), args.front())) {
      actions.emplace_back(name, add(app));
    }
  }
  try {
    program = splitProgram(args, app);
    args = sortTrainCommandLine(args);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
    for (auto& [name, action] : actions) {
      if (app.got_subcommand(name)) return action();
    }
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      app.exit(e, ctx.out, ctx.err);
      return 0;
    }
    const bool command =
        std::find(commands.begin(), commands.end(), args.front()) != commands.end();
    throw UsageError(fmt::format("{} (see '{} --help')", e.what(),
                                 command ? "distrun " + args.front() : "distrun"));
  }
}

}  // namespace

int runCli(const std::vector<std::string>& args, CliContext& ctx) {
  try {
    return parseAndAct(args, ctx);
  } catch (const std::exception& e) {
    return toInt(reportError(e, ctx));
  }
}

void checkCommandLine(const std::vector<std::string>& args, const CliContext& ctx) {
  CliContext checking = ctx;
  checking.checkOnly = true;
  parseAndAct(args, checking);
}

std::string builtinSiteDirFor(const std::string& executable) {
  std::filesystem::path exe(executable);
  return (exe.parent_path().parent_path() / "share" / "distrun" / "sites").string();
}

}  // namespace distrun::cli
