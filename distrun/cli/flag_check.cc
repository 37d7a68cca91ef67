#include "distrun/cli/flag_check.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "distrun/common/command_line.h"
#include "distrun/common/error.h"

namespace distrun::cli {

namespace {

// "run", or "trace merge" for merge under trace: `cmd`'s name after those
// of the commands above it, less the program's own.
std::string commandPath(const CLI::App& cmd) {
  std::string path = cmd.get_name();
  for (const CLI::App* p = cmd.get_parent(); p && p->get_parent(); p = p->get_parent()) {
    path = p->get_name() + " " + path;
  }
  return path;
}

}  // namespace

std::vector<std::string> longNames(const FlagSet& flags) {
  std::vector<std::string> names;
  for (const auto& [name, takesValue] : flags) {
    if (name.rfind("--", 0) == 0) names.push_back(name);
  }
  return names;
}

std::string unknownFlagMessage(const CLI::App& cmd, const std::string& arg) {
  const std::string command = commandPath(cmd);
  return command + ": " + distrun::unknownFlagMessage(cmd, arg, "distrun " + command);
}

std::vector<std::string> programArguments(const CLI::App& cmd) {
  std::vector<std::string> program = cmd.remaining();
  if (!program.empty() && program.front() == "--") {
    program.erase(program.begin());
  } else if (!program.empty() && looksLikeFlag(program.front())) {
    throw UsageError(unknownFlagMessage(cmd, program.front()));
  }
  return program;
}

std::vector<std::string> argumentsWithoutFlags(const CLI::App& cmd) {
  std::vector<std::string> args = cmd.remaining();
  for (const std::string& arg : args) {
    if (looksLikeFlag(arg)) throw UsageError(unknownFlagMessage(cmd, arg));
  }
  return args;
}

std::vector<std::string> splitProgram(std::vector<std::string>& args, const CLI::App& app) {
  if (args.empty() || (args[0] != "exec" && args[0] != "run" && args[0] != "submit")) return {};
  const FlagSet flags = flagsOf(*app.get_subcommand(args[0]));
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      std::vector<std::string> program(args.begin() + static_cast<long>(i) + 1, args.end());
      args.resize(i);
      return program;
    }
    // The program starts here, with no --; submit's command always follows
    // one, so its scan goes on (an unknown flag's value, a forgotten --).
    if (!looksLikeFlag(arg)) {
      if (args[0] == "submit") continue;
      return {};
    }
    const auto flag = flags.find(arg);
    if (flag != flags.end() && flag->second) ++i;  // its value
  }
  return {};
}

void checkFlagsBy(const std::vector<std::string>& argv, const std::string& checkFlag,
                  const std::string& command, CliContext& ctx) {
  std::vector<std::string> checking = argv;
  checking.push_back(checkFlag);
  const ToolResult r = ctx.runTool(checking, "");
  if (r.exitCode == 0) return;
  std::string why = r.err.substr(0, r.err.find('\n'));
  const std::string prefix = kErrorPrefix;
  if (why.compare(0, prefix.size(), prefix) == 0) why = why.substr(prefix.size());
  throw Error(static_cast<ExitCode>(r.exitCode),
              why.empty() ? fmt::format("{}: {} {} exited with {} and said nothing", command,
                                        argv.front(), checkFlag, r.exitCode)
                          : command + ": " + why);
}

}  // namespace distrun::cli
