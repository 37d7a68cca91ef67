// `distrun submit [OPTIONS] -- COMMAND...`: writes the batch script for a
// distrun command, submits it with sbatch and, with --wait, follows the
// job to its end (docs/submit.md).
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distrun/cli/commands.h"
#include "distrun/cli/container_flags.h"
#include "distrun/cli/flag_check.h"
#include "distrun/cluster/site_profile.h"
#include "distrun/common/command_line.h"
#include "distrun/common/error.h"
#include "distrun/common/live_line.h"
#include "distrun/submit/batch_job.h"
#include "distrun/submit/job_status.h"
#include "distrun/submit/job_watch.h"
#include "distrun/submit/sbatch_flags.h"
#include "distrun/submit/submit_plan.h"

namespace distrun::cli {
namespace {

struct SubmitOptions {
  submit::SubmitRequest request;
  std::optional<std::string> site;
  std::string format = "text";
  bool dryRun = false;
  bool wait = false;
  bool explain = false;
  std::string status = "auto";
  ContainerFlags container;
};

volatile sig_atomic_t gInterrupted = 0;

void onInterrupt(int) { gInterrupted = 1; }

// Ctrl-C while following a job: noted, and the sleep it cuts short ends.
class InterruptCatcher {
 public:
  InterruptCatcher() {
    struct sigaction action {};
    action.sa_handler = onInterrupt;  // no SA_RESTART: nanosleep returns
    ::sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptCatcher() { ::sigaction(SIGINT, &previous_, nullptr); }
  InterruptCatcher(const InterruptCatcher&) = delete;
  InterruptCatcher& operator=(const InterruptCatcher&) = delete;

 private:
  struct sigaction previous_ {};
};

std::optional<bool> askOnTerminal(const std::string& question) {
  if (::isatty(STDIN_FILENO) == 0) return std::nullopt;
  std::cerr << question << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

int watchForReal(const submit::WatchRequest& request, StatusMode status, CliContext& ctx) {
  InterruptCatcher catcher;
  gInterrupted = 0;
  submit::WatchWorld world{
      ctx.runTool,
      [](double seconds) {
        timespec t{
            static_cast<time_t>(seconds),
            static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9)};
        ::nanosleep(&t, nullptr);
      },
      [] { return gInterrupted != 0; },
      askOnTerminal,
      ctx.out,
      ctx.err,
      resolveStatusMode(status, &ctx.err == &std::cerr && consoleIsTerminal(ctx.env)),
      [&ctx] { return terminalColumns(STDERR_FILENO, ctx.env); }};
  return submit::watchJob(request, world);
}

std::optional<cluster::SiteProfile> siteFor(const SubmitOptions& o, CliContext& ctx) {
  return cluster::selectSiteProfile(o.site, ctx.env,
                                    cluster::siteSearchPath(ctx.env, ctx.builtinSiteDir));
}

void printDryRun(const std::string& script, const SubmitOptions& o, CliContext& ctx) {
  if (o.format == "json") {
    ctx.out << nlohmann::ordered_json{{"job_id", nullptr}, {"script", script}}.dump(2) << "\n";
  } else {
    ctx.out << script;
  }
}

void printSubmitted(const submit::SubmittedJob& job, const SubmitOptions& o, CliContext& ctx) {
  if (o.format == "json") {
    nlohmann::ordered_json doc{{"job_id", job.id}};
    doc["cluster"] =
        job.cluster.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(job.cluster);
    ctx.out << doc.dump(2) << "\n";
  } else {
    ctx.out << "Submitted batch job " << job.id << "\n";
  }
}

submit::WatchRequest watchRequest(const submit::BatchJob& job, const std::string& id,
                                  CliContext& ctx) {
  std::string user = ctx.env.get("USER").value_or(cluster::loginName());
  std::optional<std::string> path =
      submit::expandOutputPattern(job.output.value_or("slurm-%j.out"), id, job.jobName, user);
  if (!path) {
    ctx.err << fmt::format(
        "distrun submit: --output {} names one file per node or task: "
        "following the job without its output\n",
        *job.output);
  }
  return {id, path.value_or(""), path ? submit::statusFileOf(*path) : ""};
}

// The job's distrun command lines, checked here as distrun would check
// them on the nodes, so a mistake in them is refused before the job waits
// in the queue (the step's first word is the path of distrun).
void checkJobCommands(const submit::BatchJob& job, const CliContext& ctx) {
  for (const std::vector<std::string>* step : {&job.doctorStep, &job.step}) {
    if (step->size() > 1) checkCommandLine({step->begin() + 1, step->end()}, ctx);
  }
}

int runSubmit(SubmitOptions& o, CliContext& ctx) {
  const StatusMode status = parseStatusMode(o.status);
  o.request.distrun = ctx.toolDir + "/distrun";
  std::optional<cluster::SiteProfile> site = siteFor(o, ctx);
  const cluster::SiteProfile* profile = site ? &*site : nullptr;
  submit::BatchJob job = submit::planBatchJob(o.request, profile);
  checkJobCommands(job, ctx);
  if (std::optional<std::string> note = submit::warningNote(o.request)) ctx.err << *note << "\n";
  if (o.explain) ctx.out << submit::explainBinding(job, profile);
  std::string script = submit::batchScript(job);
  if (o.dryRun) {
    printDryRun(script, o, ctx);
    return 0;
  }
  submit::SubmittedJob submitted = submit::submitScript(ctx.runTool, script);
  printSubmitted(submitted, o, ctx);
  if (!o.wait) return 0;
  submit::WatchRequest request = watchRequest(job, submitted.id, ctx);
  return ctx.watchJob ? ctx.watchJob(request) : watchForReal(request, status, ctx);
}

void addSlurmFlags(CLI::App* cmd, submit::SubmitRequest& r) {
  cmd->add_option("--nodes,-N", r.nodes, "nodes (sbatch --nodes)")->check(CLI::PositiveNumber);
  cmd->add_option("--nproc-per-node", r.nprocPerNode,
                  "ranks per node (default: the command's, else the site's GPUs per node, else 1)");
  cmd->add_option("--gpus-per-node", r.gpusPerNode, "GPUs per node (default: the site's)");
  cmd->add_option("--cpus-per-task", r.cpusPerTask, "cores per rank");
  cmd->add_option("--time,-t", r.time, "time limit, as sbatch takes it (90, 1:30:00, 2-00)");
  cmd->add_option("--partition,-p", r.partition, "partition (default: the site's)");
  cmd->add_option("--account,-A", r.account, "account to charge");
  cmd->add_option("--qos,-q", r.qos, "quality of service");
  cmd->add_option("--job-name,-J", r.jobName, "job name (default: distrun-COMMAND)");
  cmd->add_option("--output,-o", r.output,
                  "output file, as sbatch takes it (default slurm-%j.out)");
  cmd->add_option("--sbatch-arg", r.sbatchArgs, "an sbatch option passed through (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--signal-grace", r.signalGrace,
                  "seconds of warning (USR1) before the time limit, for a program that takes "
                  "part in the preemption protocol (default 120, at most half the limit; 0: none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--checkpoint-on-warning", r.checkpointOnWarning,
                "the program writes a snapshot on SIGUSR1 and exits 79: warn it before the time "
                "limit and requeue it (distrun-train always does; docs/submit.md)");
  cmd->add_flag("--doctor", r.doctor,
                "run distrun doctor on every node before the command; stop the job if it fails");
  cmd->add_option("--doctor-arg", r.doctorArgs,
                  "a flag for that doctor, e.g. --doctor-arg=--straggler-margin=50 (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--max-requeues", r.maxRequeues,
                  "times a job that checkpointed on the warning is requeued (default 3)")
      ->check(CLI::NonNegativeNumber);
}

// What submit says of the first argument its parser left: an sbatch flag,
// with its --sbatch-arg form; a flag of neither, with submit's nearest; a
// word, the command without its --.
std::string leftoverMessage(const CLI::App& cmd, const std::vector<std::string>& rest) {
  if (std::optional<std::string> sbatch = submit::sbatchFlagMessage(rest)) return *sbatch;
  if (looksLikeFlag(rest.front())) {
    return unknownFlagMessage(cmd, rest.front()) +
           " (sbatch's own flags go as --sbatch-arg=--FLAG=VALUE)";
  }
  return fmt::format("submit: put the distrun command after --: distrun submit [OPTIONS] -- {}",
                     fmt::join(rest, " "));
}

// --container and its binds, checked now (the image opens, the binds exist
// here), passed on to the job's distrun command after its name.
std::vector<std::string> withContainer(std::vector<std::string> command, const SubmitOptions& o,
                                       CliContext& ctx) {
  containerRequest(o.container, o.site, ctx.env, ctx);
  if (command.empty() || !o.container.image) return command;
  std::vector<std::string> args = containerArguments(o.container);
  command.insert(command.begin() + 1, args.begin(), args.end());
  return command;
}

}  // namespace

Action addSubmitCommand(CLI::App& app, CliContext& ctx, const std::vector<std::string>& program) {
  auto options = std::make_shared<SubmitOptions>();
  CLI::App* cmd = app.add_subcommand(
      "submit",
      "Write the batch script for a distrun command (run, train, bench, exec), submit it with "
      "sbatch, and with --wait follow it to its end; it binds every rank and requeues a job "
      "that checkpointed before its time limit (docs/submit.md)");
  addSlurmFlags(cmd, options->request);
  cmd->add_option("--site", options->site, "site profile NAME, or 'none' (default: detected)");
  cmd->add_flag("--dry-run", options->dryRun, "print the script; submit nothing");
  cmd->add_flag("--wait", options->wait,
                "follow the job to its end, print its output, exit with its exit code");
  cmd->add_option("--status", options->status,
                  "with --wait, the job's state and progress: auto (default: line on a "
                  "terminal, else plain), line, plain (a line every 30 s) or none");
  cmd->add_flag("--explain", options->explain, "print every rank's cores, GPU and NUMA domain");
  cmd->add_option("--format", options->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  addContainerFlags(cmd, options->container);
  cmd->allow_extras();  // what is left must be nothing: the command follows --
  cmd->footer("-- COMMAND [ARGS...]: the distrun command the job runs, e.g. -- train mnist");
  return [options, cmd, &ctx, &program] {
    std::vector<std::string> rest = cmd->remaining();
    if (!rest.empty()) throw UsageError(leftoverMessage(*cmd, rest));
    options->request.command = withContainer(program, *options, ctx);
    return runSubmit(*options, ctx);
  };
}

}  // namespace distrun::cli
