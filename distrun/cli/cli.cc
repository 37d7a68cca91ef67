#include "distrun/cli/cli.h"

#include <filesystem>
#include <ostream>

#include <fmt/format.h>

#include "distrun/cli/commands.h"
#include "distrun/common/error.h"
#include "distrun/config.h"

namespace distrun::cli {

namespace {

constexpr const char* kDescription =
    "distrun: launch data-parallel training on one machine or a Slurm "
    "cluster. See docs/ for every command.";

ExitCode reportError(const std::exception& e, CliContext& ctx) {
  ctx.err << "distrun: error: " << e.what() << "\n";
  return exitCodeFor(e);
}

ExitCode reportParseError(const CLI::ParseError& e, CLI::App& app, CliContext& ctx) {
  if (e.get_exit_code() == 0) {  // --help, --version
    app.exit(e, ctx.out, ctx.err);
    return ExitCode::kSuccess;
  }
  ctx.err << "distrun: error: " << e.what() << " (see 'distrun --help')\n";
  return ExitCode::kUsage;
}

}  // namespace

int runCli(const std::vector<std::string>& argsIn, CliContext& ctx) {
  std::vector<std::string> args = argsIn;
  const std::vector<std::string> program = splitExecProgram(args);
  CLI::App app(kDescription, "distrun");
  app.set_version_flag("--version", std::string("distrun ") + DISTRUN_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<std::string, Action>> actions = {
      {"hostnames", addHostnamesCommand(app, ctx)}, {"env", addEnvCommand(app, ctx)},
      {"exec", addExecCommand(app, ctx, program)},  {"run", addRunCommand(app, ctx)},
      {"bench", addBenchCommand(app, ctx)},         {"train", addTrainCommand(app, ctx)},
  };
  try {
    args = sortTrainCommandLine(args);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
    for (auto& [name, action] : actions) {
      if (app.got_subcommand(name)) return action();
    }
    return 0;
  } catch (const CLI::ParseError& e) {
    return toInt(reportParseError(e, app, ctx));
  } catch (const std::exception& e) {
    return toInt(reportError(e, ctx));
  }
}

std::string builtinSiteDirFor(const std::string& executable) {
  std::filesystem::path exe(executable);
  return (exe.parent_path().parent_path() / "share" / "distrun" / "sites").string();
}

}  // namespace distrun::cli
