#include <string>
#include <vector>

#include "distrun/cli/commands.h"
#include "distrun/cli/flag_check.h"

namespace distrun::cli {

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
      // --list parses and checks every flag (and opens a --container image).
      checkFlagsBy(argv, "--list", "doctor", ctx);
      return 0;
    }
    ctx.exec(argv, {});
    return 0;  // not reached: exec replaces this process or throws
  };
}

}  // namespace distrun::cli
