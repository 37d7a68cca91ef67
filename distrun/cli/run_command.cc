#include <dirent.h>

#include <ostream>

#include "distrun/binding/agent_gpus.h"
#include "distrun/binding/binding_plan.h"
#include "distrun/binding/local_topology.h"
#include "distrun/cli/commands.h"
#include "distrun/cli/container_flags.h"
#include "distrun/cli/container_launch.h"
#include "distrun/cli/flag_check.h"
#include "distrun/cluster/job_layout.h"
#include "distrun/cluster/leftovers.h"
#include "distrun/common/error.h"
#include "distrun/common/live_line.h"
#include "distrun/common/strings.h"
#include "distrun/container/container_session.h"
#include "distrun/launch/agent.h"
#include "distrun/launch/poll_sources.h"
#include "distrun/launch/run_options.h"
#include "distrun/launch/worker_program.h"

namespace distrun::cli {

namespace {

using launch::RunOptions;

// torchrun's spelling pairs, and the PET_ variable of each.
std::string names(const std::string& dashed) {
  std::string underscored = dashed;
  std::replace(underscored.begin(), underscored.end(), '-', '_');
  if (underscored == dashed) return "--" + dashed;
  return "--" + dashed + ",--" + underscored;
}

std::string pet(const std::string& dashed) {
  std::string v = "PET_" + dashed;
  for (char& c : v) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return v;
}

template <typename T>
void option(CLI::App* cmd, const std::string& dashed, T& target, const std::string& help) {
  cmd->add_option(names(dashed), target, help)->envname(pet(dashed));
}

void flag(CLI::App* cmd, const std::string& dashed, bool& target, const std::string& help) {
  cmd->add_flag(names(dashed), target, help)->envname(pet(dashed));
}

void addTorchrunFlags(CLI::App* cmd, RunOptions& o, std::string& ignored) {
  option(cmd, "nnodes", o.nnodes, "number of nodes: N, or MIN:MAX for an elastic job");
  option(cmd, "nproc-per-node", o.nprocPerNode, "workers per node: N, cpu, gpu, xpu or auto");
  option(cmd, "node-rank", o.nodeRank,
         "this node's rank (default: SLURM_NODEID; none: by arrival)");
  option(cmd, "master-addr", o.masterAddr, "host of node 0's store (static rendezvous)");
  option(cmd, "master-port", o.masterPort, "port of node 0's store (static rendezvous)");
  option(cmd, "rdzv-endpoint", o.rdzvEndpoint, "HOST[:PORT] of node 0's store");
  option(cmd, "rdzv-id", o.rdzvId, "run id (TORCHELASTIC_RUN_ID)");
  option(cmd, "rdzv-conf", o.rdzvConf, "key=value,...: join_timeout=S, last_call_timeout=S");
  option(cmd, "rdzv-backend", ignored, "accepted for torchrun; distrun uses its own store");
  option(cmd, "monitor-interval", ignored, "accepted for torchrun; distrun reacts to events");
  option(cmd, "start-method", ignored, "accepted for torchrun; workers are processes");
  option(cmd, "logs-specs", ignored, "accepted for torchrun; see --log-dir");
  option(cmd, "event-log-handler", ignored, "accepted for torchrun; no effect");
  option(cmd, "signals-to-handle", o.signalsToHandle,
         "the workers' TORCHELASTIC_SIGNALS_TO_HANDLE; distrun forwards TERM INT HUP QUIT USR1 "
         "USR2 whatever it says");
  option(cmd, "numa-binding", ignored, "accepted for torchrun; see --cpu-bind");
  flag(cmd, "standalone", o.standalone, "one node, private store on a free port");
  option(cmd, "max-restarts", o.maxRestarts, "restarts of all workers after a failure");
  option(cmd, "role", o.role, "ROLE_NAME of the workers");
  cmd->add_flag("-m,--module", o.module, "run PROGRAM as a Python module")->envname("PET_MODULE");
  flag(cmd, "no-python", o.noPython, "run PROGRAM directly, even a .py file");
  flag(cmd, "run-path", o.runPath, "run PROGRAM as a Python file");
  option(cmd, "log-dir", o.logDir, "per-rank stdout/stderr files under DIR");
  cmd->add_option("-r,--redirects", o.redirects, "streams to files only: 0-3 or 0:1,1:2")
      ->envname("PET_REDIRECTS");
  cmd->add_option("-t,--tee", o.tee, "streams to files and console: 0-3 or 0:1,1:2")
      ->envname("PET_TEE");
  option(cmd, "local-ranks-filter", o.localRanksFilter, "local ranks shown on the console");
  option(cmd, "local-addr", o.localAddr, "this node's address for the others");
  option(cmd, "duplicate-stdout-filters", o.duplicateStdoutFilters,
         "also write the workers' stdout lines holding one of these words (a,b; ,, for a comma) "
         "to filtered_stdout.log in the attempt's log folder");
  option(cmd, "duplicate-stderr-filters", o.duplicateStderrFilters,
         "the same for stderr, to filtered_stderr.log");
  option(cmd, "print-completion", o.printCompletion,
         "print a shell completion script for torchrun and distrun run (bash, zsh, tcsh)");
  flag(cmd, "virtual-local-rank", o.virtualLocalRank,
       "each worker sees only its GPU, as device 0, with LOCAL_RANK=0");
  cmd->add_option(names("shutdown-timeout"), o.termTimeout,
                  "seconds between SIGTERM and SIGKILL (torchrun's name for --term-timeout)")
      ->envname("TORCH_ELASTIC_SHUTDOWN_TIMEOUT");
  cmd->add_option(names("log-line-prefix-template"), o.logLinePrefixTemplate,
                  "console prefix as torchrun spells it: ${role_name} ${rank} ${local_rank} "
                  "${hostname}")
      ->envname("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE");
}

void addDistrunFlags(CLI::App* cmd, RunOptions& o) {
  cmd->add_option("--python", o.python,
                  "Python for .py programs (default: $DISTRUN_PYTHON or python3)");
  cmd->add_option(
      "--term-timeout", o.termTimeout,
      "seconds between forwarding SIGTERM and SIGKILL (default 25, under Slurm's KillWait)");
  cmd->add_option("--join-timeout", o.joinTimeout, "seconds to wait for every node (default 300)");
  cmd->add_option("--hang-timeout", o.hangTimeout,
                  "end the job (exit 75) when a worker made no progress (its reports on "
                  "DISTRUN_PROGRESS_FD, else CPU time or output) "
                  "for SECONDS (default 0: off)");
  cmd->add_option("--status", o.status,
                  "live status line under the workers' output: auto (default: line on a "
                  "terminal, else plain), line, plain (a line every 30 s) or none");
  cmd->add_option(
      "--log-prefix", o.logPrefix,
      "console prefix: {node} {rank} {local_rank} {role} {host} (default '[{node}:{rank}] ')");
  cmd->add_option("--cpu-bind", o.cpuBind,
                  "cores (default: the plan's cores), numa, site, mask:0x1,0x2,... or none");
  cmd->add_option("--gpu-bind", o.gpuBind,
                  "closest (default where the node has GPUs), map:0,1,... or none");
  cmd->add_flag("--explain", o.explain, "print each worker's cores and GPU, start nothing");
  cmd->add_option("--site", o.site, "site profile NAME, or 'none'");
  cmd->add_flag("-v,--verbose", o.verbose,
                "print the workers' command (and which Python runs a .py program) first");
  addContainerFlags(cmd, o.container);
}

// The GPUs the workers may use (--nproc-per-node gpu): the agent's GPUs on
// this node's topology (an inherited visibility list, else the node's PCI
// GPUs: NVIDIA's and AMD's alike), else the /dev/nvidiaN files.
int visibleGpus(const Environment& env, const binding::NodeTopology& node) {
  if (!node.gpus.empty()) {
    return static_cast<int>(binding::agentGpus(node, env).ids.size());
  }
  auto [visible, variable] = cluster::readVisibleDevices(env);
  if (!visible.empty()) return static_cast<int>(visible.size());
  int count = 0;
  if (DIR* dev = ::opendir("/dev")) {
    while (dirent* e = ::readdir(dev)) {
      std::string n = e->d_name;
      count += n.size() > 6 && n.rfind("nvidia", 0) == 0 &&
               n.find_first_not_of("0123456789", 6) == std::string::npos;
    }
    ::closedir(dev);
  }
  return count;
}

}  // namespace

void addLauncherFlags(CLI::App* cmd, launch::RunOptions& o, std::string& ignored) {
  addTorchrunFlags(cmd, o, ignored);
  addDistrunFlags(cmd, o);
}

namespace {

launch::RunContext runContext(const Environment& env, CliContext& ctx) {
  HostFacts host = ctx.hostFacts();
  if (!ctx.nodeTopology) ctx.nodeTopology = binding::readNodeTopology(env, host.hostname);
  return launch::RunContext{env,
                            host,
                            usableCpus(),
                            ctx.builtinSiteDir,
                            visibleGpus(env, *ctx.nodeTopology),
                            ctx.nodeTopology,
                            consoleIsTerminal(env)};
}

// --container's request, the site profile's binds included; the image is
// checked (openImage) before anything starts.
std::optional<container::ContainerRequest> workersContainer(const RunOptions& o,
                                                            const Environment& env,
                                                            CliContext& ctx) {
  return containerRequest(o.container, o.site, env, ctx);
}

}  // namespace

namespace {

// The checks of the flags that need this node (its layout, topology and
// images), in the order a user meets them; the container request they made.
std::optional<container::ContainerRequest> checkLauncherFlags(const launch::RunOptions& o,
                                                              const Environment& env,
                                                              const launch::RunContext& context,
                                                              CliContext& ctx) {
  launch::checkRunOptions(o, cluster::detectJobLayout(env, ctx.hostFacts()));
  launch::checkBindOptions(o, context);
  return workersContainer(o, env, ctx);
}

int runLauncher(launch::RunOptions& o, CliContext& ctx) {
  launch::blockWarningSignals();  // before anything else: srun may pass on a warning early
  // What an earlier eval "$(distrun env)" left is neither read nor passed on.
  cluster::UserEnvironment user(ctx.env);
  for (const auto& [name, value] : o.environment) user.env.set(name, value);
  // The node's facts read once: start-up is measured (bench/launch.sh).
  const launch::RunContext context = runContext(user.env, ctx);
  std::optional<container::ContainerRequest> request =
      checkLauncherFlags(o, user.env, context, ctx);
  launch::AgentConfig config = launch::resolveAgentConfig(o, context);
  for (const std::string& note : launch::rdzvConfNotes(o.rdzvConf)) {
    ctx.err << "distrun run: note: " << note << "\n";
  }
  if (o.explain) {
    ctx.out << binding::formatPlanTable(config.plan, {ctx.hostFacts().hostname});
    return 0;
  }
  std::unique_ptr<container::ContainerSession> container;
  if (request) {
    container = enterWorkers(*request, config, user.env, o.verbose, ctx.err);
  } else {
    launch::locateProgram(config, user.env.get("PATH"), ".");
  }
  if (o.verbose) ctx.err << launch::describeProgram(config);
  return launch::Agent(std::move(config), user.env, ctx.err).run();
}

}  // namespace

// torchrun's --print-completion: the flags of `cmd` as a completion script
// for `torchrun` (the link) and `distrun` in shell `shell`.
int printCompletion(const CLI::App& cmd, const std::string& shell, std::ostream& out) {
  std::vector<std::string> words;
  for (const CLI::Option* option : cmd.get_options()) {
    for (const std::string& name : option->get_lnames()) words.push_back("--" + name);
    for (const std::string& name : option->get_snames()) words.push_back("-" + name);
  }
  const std::string list = join(words, " ");
  if (shell == "bash") {
    out << "complete -o default -W '" << list << "' torchrun\n";
  } else if (shell == "zsh") {
    out << "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -W '" << list
        << "' torchrun\n";
  } else if (shell == "tcsh") {
    out << "complete torchrun 'c/-/(" << list << ")/'\n";
  } else {
    throw UsageError("--print-completion " + shell + ": expected bash, zsh or tcsh");
  }
  return 0;
}

Action addRunCommand(CLI::App& app, CliContext& ctx, const std::vector<std::string>& program) {
  auto options = std::make_shared<RunOptions>();
  options->pythonByDefault = ctx.asTorchrun;
  auto ignored = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("run",
                         "Node agent, torchrun-compatible: start --nproc-per-node workers on "
                         "this node, join the other nodes, supervise, restart, report");
  addLauncherFlags(cmd, *options, *ignored);
  cmd->prefix_command();
  cmd->footer("PROGRAM [ARGS...] follow the options, after an optional -- (see docs/launcher.md)");
  return [options, ignored, cmd, &ctx, &program] {
    const std::vector<std::string> rest = programArguments(*cmd);
    options->program = program.empty() ? rest : program;
    if (options->printCompletion) return printCompletion(*cmd, *options->printCompletion, ctx.out);
    if (ctx.checkOnly) {  // the layout is the job's nodes'
      launch::checkProgramGiven(*options);
      return 0;
    }
    return launchAgent(*options, ctx);
  };
}

int launchAgent(launch::RunOptions& o, CliContext& ctx) {
  if (!ctx.runAgent) return runLauncher(o, ctx);
  const cluster::UserEnvironment user(ctx.env);
  checkLauncherFlags(o, user.env, runContext(user.env, ctx), ctx);
  return ctx.runAgent(o);
}

}  // namespace distrun::cli
