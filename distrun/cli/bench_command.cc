#include <string>
#include <vector>

#include "distrun/cli/commands.h"
#include "distrun/cli/container_flags.h"
#include "distrun/cli/container_launch.h"
#include "distrun/cli/flag_check.h"

namespace distrun::cli {

Action addBenchCommand(CLI::App& app, CliContext& ctx) {
  CLI::App* cmd =
      app.add_subcommand("bench",
                         "Collective benchmark in nccl-tests' format (all_reduce, broadcast, "
                         "all_gather, reduce_scatter, alltoall, sendrecv) and the pi smoke test; "
                         "see 'distrun bench --help'");
  cmd->prefix_command();
  cmd->set_help_flag();  // --help goes to distrun-bench
  return [cmd, &ctx] {
    std::vector<std::string> args = cmd->remaining();
    ContainerFlags flags = takeContainerFlags(args);
    std::vector<std::string> argv = {ctx.toolDir + "/distrun-bench"};
    argv.insert(argv.end(), args.begin(), args.end());
    if (ctx.checkOnly) {
      checkFlagsBy(argv, "--dry-run", "bench", ctx);
      return 0;
    }
    // bench has no --site of its own: the detected profile's binds apply.
    std::optional<container::ContainerRequest> request =
        containerRequest(flags, std::nullopt, ctx.env, ctx);
    if (request) return runInContainer(ctx, *request, argv, {}, false);
    ctx.exec(argv, {});
    return 0;  // not reached: exec replaces this process or throws
  };
}

}  // namespace distrun::cli
