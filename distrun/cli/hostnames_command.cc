#include <ostream>

#include "distrun/cli/commands.h"
#include "distrun/cli/flag_check.h"
#include "distrun/cluster/hostlist.h"
#include "distrun/cluster/job_layout.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::cli {

namespace {

struct HostnamesOptions {
  std::vector<std::string> lists;
  bool compress = false;
};

// The hosts of the lists given, else of the job's list (its errors name
// the variable).
std::vector<std::string> inputHosts(const HostnamesOptions& o, const Environment& env) {
  if (!o.lists.empty()) return cluster::expandHostlist(join(o.lists, ","));
  for (const char* name : {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (auto value = env.get(name)) return cluster::detail::hostsOf(name, *value);
  }
  throw UsageError(
      "hostnames: no HOSTLIST given and neither SLURM_JOB_NODELIST nor "
      "SLURM_NODELIST is set");
}

void runHostnames(const HostnamesOptions& o, CliContext& ctx) {
  std::vector<std::string> hosts = inputHosts(o, ctx.env);
  if (o.compress) {
    if (!hosts.empty()) ctx.out << cluster::compressHostlist(hosts) << "\n";
    return;
  }
  for (const std::string& host : hosts) ctx.out << host << "\n";
}

}  // namespace

Action addHostnamesCommand(CLI::App& app, CliContext& ctx) {
  auto options = std::make_shared<HostnamesOptions>();
  CLI::App* cmd =
      app.add_subcommand("hostnames",
                         "Expand a Slurm hostlist, one host per line, exactly as `scontrol show "
                         "hostnames` does (default: $SLURM_JOB_NODELIST)");
  cmd->add_flag("--compress", options->compress,
                "print the hosts as one compressed hostlist instead");
  // HOSTLIST arguments are taken verbatim from the unparsed rest: as a
  // declared positional, the parser would read "[1-2][3-4]" as its own
  // bracketed list syntax. A hostlist never starts with '-': such an
  // argument is a flag hostnames does not know.
  cmd->allow_extras();
  cmd->footer("HOSTLIST...: e.g. 'nid[005252-005254],gpu-[01-03]'");
  return [options, cmd, &ctx] {
    options->lists = argumentsWithoutFlags(*cmd);
    runHostnames(*options, ctx);
    return 0;
  };
}

}  // namespace distrun::cli
