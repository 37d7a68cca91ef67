#include <sys/stat.h>

#include <cerrno>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "distrun/binding/agent_gpus.h"
#include "distrun/binding/bind_flags.h"
#include "distrun/binding/local_topology.h"

#include "distrun/cli/commands.h"
#include "distrun/cli/container_flags.h"
#include "distrun/cli/container_launch.h"
#include "distrun/cli/flag_check.h"
#include "distrun/cli/rank_setup.h"
#include "distrun/cluster/leftovers.h"
#include "distrun/common/error.h"

namespace distrun::cli {

namespace {

struct ExecOptions {
  std::optional<std::string> site;
  std::optional<std::string> gpuBind;
  bool verbose = false;
  ContainerFlags container;
  std::vector<std::string> program;
};

// Rank 0 hosts the store on MASTER_PORT. When distrun chose the port, rank 0
// checks it is free before the program starts, so a clash is one clear line
// rather than a rendezvous that hangs until its timeout.
void checkMasterPort(const cluster::ThisTask& s) {
  if (s.layout.rank != 0 || !s.environment.masterPortDerived) return;
  const cluster::RankVariable* port = s.environment.find("MASTER_PORT");
  if (port == nullptr || tcpPortIsFree(std::stoi(port->value))) return;
  throw ConfigError(
      fmt::format("MASTER_PORT {} (derived from job {} step {}) is already in use on this "
                  "node: set MASTER_PORT to a free port",
                  port->value, s.layout.jobId, s.layout.stepId));
}

using Variables = std::vector<std::pair<std::string, std::string>>;

void setVariable(Variables& variables, const std::string& name, const std::string& value) {
  for (auto& [n, v] : variables) {
    if (n == name) {
      v = value;
      return;
    }
  }
  variables.emplace_back(name, value);
}

// The position of this task's GPU among the task's GPUs (-1: none).
int taskDevice(const binding::GpuBind& bind, const binding::NodeTopology& node,
               const cluster::JobLayout& layout) {
  if (bind.mode == binding::GpuBind::Mode::kClosest) {
    return binding::rankDevice(node, layout.localRank, layout.localWorldSize);
  }
  binding::checkGpuBindCount(bind, layout.localWorldSize);
  return binding::mappedDevice(bind, node, layout.localRank, "task");
}

// --gpu-bind: this task's GPU from the plan (the site profile's node
// description, else this node's) made cuda:LOCAL_RANK of the GPUs srun or
// mpirun gave the task (workerGpus), as `distrun run` does for its workers.
void addVisibleGpus(const ExecOptions& o, CliContext& ctx, const Environment& env,
                    const cluster::ThisTask& task, Variables& variables) {
  if (!o.gpuBind) return;
  binding::GpuBind bind = binding::parseGpuBind(*o.gpuBind);
  if (bind.mode == binding::GpuBind::Mode::kNone) return;
  std::optional<cluster::SiteProfile> site =
      cluster::selectSiteProfile(o.site, env, cluster::siteSearchPath(env, ctx.builtinSiteDir));
  binding::NodeTopology node =
      site && site->node ? *site->node : binding::readNodeTopology(env, ctx.hostFacts().hostname);
  std::string fallback =
      site && !site->gpuVisibility.empty() ? site->gpuVisibility : "CUDA_VISIBLE_DEVICES";
  binding::AgentGpus gpus = binding::agentGpus(node, env, fallback);
  binding::WorkerGpus shown = binding::workerGpus(
      gpus.ids, taskDevice(bind, gpus.node, task.layout), task.layout.localRank, false);
  if (shown.localDevice < 0) return;
  if (shown.visible) setVariable(variables, gpus.variable, *shown.visible);
  setVariable(variables, "DISTRUN_LOCAL_DEVICE", std::to_string(shown.localDevice));
}

void checkProgramGiven(const ExecOptions& o) {
  if (o.program.empty()) {
    throw UsageError("exec: no PROGRAM given: distrun exec [OPTIONS] -- PROGRAM [ARGS...]");
  }
}

int runExec(const ExecOptions& o, CliContext& ctx) {
  const cluster::UserEnvironment user(ctx.env);
  std::optional<container::ContainerRequest> request =
      containerRequest(o.container, o.site, user.env, ctx);
  cluster::ThisTask setup = prepareRank(ctx, user.env, o.site);
  cluster::makeNodeDirs(setup.environment);
  checkMasterPort(setup);
  if (o.verbose && !user.leftovers.empty()) {
    ctx.err << "distrun exec: note: " << cluster::leftoversNote(user.leftovers) << "\n";
  }
  Variables variables;
  for (const auto& v : setup.environment.variables) variables.emplace_back(v.name, v.value);
  addVisibleGpus(o, ctx, user.env, setup, variables);
  for (const auto& [name, value] : variables) {
    if (o.verbose) ctx.err << "distrun exec: " << name << "=" << value << "\n";
  }
  // The values above replace what the marker lists; the program gets an
  // empty marker, so none of them reads as left over to a distrun it runs.
  if (ctx.env.has(cluster::kEnvMarker)) variables.emplace_back(cluster::kEnvMarker, "");
  if (request) return runInContainer(ctx, *request, o.program, variables, o.verbose);
  ctx.exec(o.program, variables);
  return 0;  // not reached: exec replaces this process or throws
}

}  // namespace

Action addExecCommand(CLI::App& app, CliContext& ctx, const std::vector<std::string>& program) {
  auto options = std::make_shared<ExecOptions>();
  CLI::App* cmd =
      app.add_subcommand("exec",
                         "Set this task's rank environment from the scheduler and replace "
                         "distrun with PROGRAM (one task per rank: srun/mpirun ... distrun exec "
                         "-- PROGRAM)");
  cmd->add_option("--site", options->site, "site profile NAME, or 'none' (default: detected)");
  cmd->add_option(
      "--gpu-bind", options->gpuBind,
      "closest (this rank's GPU from the plan as cuda:LOCAL_RANK), map:0,1,... or none (default)");
  cmd->add_flag("-v,--verbose", options->verbose, "print every variable set to stderr first");
  addContainerFlags(cmd, options->container);
  // PROGRAM and everything after it are left unparsed for the program.
  cmd->prefix_command();
  cmd->footer("PROGRAM [ARGS...] follow the options, after an optional --");
  return [options, cmd, &ctx, &program] {
    const std::vector<std::string> rest = programArguments(*cmd);
    options->program = program.empty() ? rest : program;
    checkProgramGiven(*options);
    return ctx.checkOnly ? 0 : runExec(*options, ctx);
  };
}

void execProgram(const std::vector<std::string>& argv,
                 const std::vector<std::pair<std::string, std::string>>& variables) {
  for (const auto& [name, value] : variables) {
    if (::setenv(name.c_str(), value.c_str(), 1) != 0) {
      throw SystemError("setenv", name, errno);
    }
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  int err = errno;
  ExitCode code = err == ENOENT ? ExitCode::kNotFound : ExitCode::kNotExecutable;
  throw SystemError(code, fmt::format("exec: cannot run '{}': {}", argv[0], std::strerror(err)));
}

}  // namespace distrun::cli
