#include <string>
#include <vector>

#include "distrun/cli/commands.h"

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
    std::vector<std::string> argv = {ctx.toolDir + "/distrun-bench"};
    for (const std::string& a : cmd->remaining()) argv.push_back(a);
    ctx.exec(argv, {});
    return 0;  // not reached: exec replaces this process or throws
  };
}

}  // namespace distrun::cli
