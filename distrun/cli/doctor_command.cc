#include <string>
#include <vector>

#include <fmt/format.h>

#include "distrun/cli/commands.h"
#include "distrun/common/error.h"

namespace distrun::cli {
namespace {

// The first line of `text`, without distrun's error prefix.
std::string errorLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  const std::string prefix = kErrorPrefix;
  return line.compare(0, prefix.size(), prefix) == 0 ? line.substr(prefix.size()) : line;
}

// distrun-doctor checks `args` itself: with --list it parses and checks
// every flag (and opens a --container image), then lists its checks. Its
// error is thrown here, with its exit code.
void checkDoctorFlags(const std::vector<std::string>& argv, CliContext& ctx) {
  std::vector<std::string> listing = argv;
  listing.push_back("--list");
  const ToolResult r = ctx.runTool(listing, "");
  if (r.exitCode == 0) return;
  const std::string why = errorLine(r.err);
  throw Error(static_cast<ExitCode>(r.exitCode),
              why.empty() ? fmt::format("doctor: {} --list exited with {} and said nothing",
                                        argv.front(), r.exitCode)
                          : "doctor: " + why);
}

}  // namespace

Action addDoctorCommand(CLI::App& app, CliContext& ctx) {
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Check whether this node or allocation can train, and what is wrong where; see "
      "'distrun doctor --help'");
  cmd->prefix_command();
  cmd->set_help_flag();  // --help goes to distrun-doctor
  return [cmd, &ctx] {
    std::vector<std::string> argv = {ctx.toolDir + "/distrun-doctor"};
    const std::vector<std::string> args = cmd->remaining();
    argv.insert(argv.end(), args.begin(), args.end());
    if (ctx.checkOnly) {
      checkDoctorFlags(argv, ctx);
      return 0;
    }
    ctx.exec(argv, {});
    return 0;  // not reached: exec replaces this process or throws
  };
}

}  // namespace distrun::cli
