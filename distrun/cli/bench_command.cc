#include <string>
#include <vector>

#include "distrun/cli/commands.h"
#include "distrun/cli/container_flags.h"
#include "distrun/cli/container_launch.h"

namespace distrun::cli {

namespace {

// The site profile whose binds a --container gets: the detected one (bench
// has no --site flag of its own).
std::optional<cluster::SiteProfile> benchSite(const ContainerFlags& flags, CliContext& ctx) {
  if (!flags.image) return std::nullopt;
  return cluster::selectSiteProfile(std::nullopt, ctx.env,
                                    cluster::siteSearchPath(ctx.env, ctx.builtinSiteDir));
}

}  // namespace

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
    std::optional<container::ContainerRequest> request =
        containerRequest(flags, benchSite(flags, ctx), ctx.toolDir);
    if (request) return runInContainer(ctx, *request, argv, {}, false);
    ctx.exec(argv, {});
    return 0;  // not reached: exec replaces this process or throws
  };
}

}  // namespace distrun::cli
