#include "distrun/doctor/doctor_cli.h"

#include <chrono>

#include <fmt/format.h>

#include "distrun/cluster/leftovers.h"
#include "distrun/cluster/site_profile.h"
#include "distrun/common/command_line.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/container/image_file.h"
#include "distrun/doctor/checks.h"
#include "distrun/doctor/probe.h"
#include "distrun/doctor/report_format.h"

namespace distrun::doctor {

namespace {

// Flags as typed, before they are checked and turned into DoctorOptions.
struct RawFlags {
  std::string checks;
  std::optional<double> stragglerPercent;
  int timeLimit = 60;
  bool list = false;
  bool here = false;
};

void addFlags(CLI::App& app, DoctorOptions& o, RawFlags& raw) {
  app.add_option("--format", o.format, "table (default), json, or nhc (node health check lines)");
  app.add_option("--min-busbw", o.minBusbw,
                 "fail when the allreduce among the nodes is below this bus bandwidth, GB/s");
  app.add_option("--checks", raw.checks, "comma-separated checks to run (default: all; --list)");
  app.add_option("--site", o.site, "site profile (default: detected; 'none': no profile)");
  app.add_option("--nproc-per-node", o.nprocPerNode,
                 "ranks per node the training will run, for the binding and GPU checks");
  app.add_option("--time-limit", raw.timeLimit, "seconds one check may run (default 60)");
  app.add_option("--container", o.container, "import torch inside this image (python check)");
  app.add_option("--python", o.python,
                 "the Python the training uses (default: $DISTRUN_PYTHON, $PYTHON_EXEC, else "
                 "python3, as for distrun run; none: no Python)");
  app.add_option("--snapshot", o.snapshot, "the snapshot the training writes: check its folder");
  app.add_option("--straggler-margin", raw.stragglerPercent,
                 "percent slower than the median that makes a straggler (default 25)");
  app.add_flag("--list", raw.list, "list the checks and exit");
  app.add_flag("--here", raw.here, "check this node only, even inside an allocation");
}

std::vector<std::string> parseChecks(const std::string& text) {
  std::vector<std::string> names;
  const std::vector<std::string> known = allCheckNames();
  for (const std::string& name : split(text, ',')) {
    if (std::find(known.begin(), known.end(), name) != known.end()) {
      names.push_back(name);
      continue;
    }
    std::string hint = "; one of: " + join(known, ", ");
    if (auto nearest = closestName(name, known)) hint = ": did you mean " + *nearest + "?";
    throw UsageError("--checks: '" + name + "' is not a check" + hint);
  }
  return names;
}

void resolve(DoctorOptions& o, const RawFlags& raw) {
  if (o.format != "table" && o.format != "json" && o.format != "nhc") {
    throw UsageError("--format " + o.format + ": expected table, json or nhc");
  }
  if (!raw.checks.empty()) o.checks = parseChecks(raw.checks);
  if (raw.timeLimit < 1) {
    throw UsageError(
        fmt::format("--time-limit {}: expected whole seconds, at least 1", raw.timeLimit));
  }
  o.timeLimit = std::chrono::seconds(raw.timeLimit);
  if (o.minBusbw && !(*o.minBusbw > 0)) {
    throw UsageError(fmt::format("--min-busbw {}: expected GB/s above 0", *o.minBusbw));
  }
  if (o.nprocPerNode && *o.nprocPerNode < 1) {
    throw UsageError(fmt::format("--nproc-per-node {}: expected at least 1", *o.nprocPerNode));
  }
  if (raw.stragglerPercent) {
    if (!(*raw.stragglerPercent > 0)) {
      throw UsageError(fmt::format("--straggler-margin {}: expected a percentage above 0",
                                   *raw.stragglerPercent));
    }
    o.stragglerMargin = *raw.stragglerPercent / 100;
  }
  // A missing or broken image is the user's mistake, not a failed check.
  if (o.container) container::openImage(*o.container);
}

void writeCheckList(std::ostream& out) {
  for (const Check& check : nodeChecks()) out << fmt::format("{:<14} {}\n", check.name, check.what);
  for (const JobCheck& check : jobChecks()) {
    out << fmt::format("{:<14} {}\n", check.name, check.what);
  }
}

// Inside an allocation (SLURM_JOB_ID) but not in one of its steps.
bool outsideAStep(const Environment& env) {
  return env.get("SLURM_JOB_ID") && !env.get("SLURM_STEP_ID") && !env.get("SLURM_STEPID");
}

int check(const DoctorOptions& options, const Environment& env, DoctorContext& ctx) {
  const auto start = std::chrono::steady_clock::now();
  auto probe = makeProbeContext(env, ctx.hostFacts(), options, ctx.builtinSiteDir, ctx.toolDir);
  std::optional<DoctorReport> report = runProbe(probe, ctx.err);
  if (!report) return 0;  // not rank 0: rank 0 prints and exits with the verdict
  report->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  writeReport(ctx.out, *report, options.format);
  ctx.out.flush();
  return worstState(*report) == CheckState::kFail ? toInt(ExitCode::kCheckFailed) : 0;
}

}  // namespace

std::vector<std::string> srunOverAllocation(const Environment& env, const std::string& executable,
                                            const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"srun", "--ntasks-per-node=1", "--cpu-bind=none",
                                   "--kill-on-bad-exit=0"};
  if (auto nodes = env.get("SLURM_JOB_NUM_NODES")) argv.push_back("--nodes=" + *nodes);
  if (auto cpus = env.get("SLURM_CPUS_ON_NODE")) argv.push_back("--cpus-per-task=" + *cpus);
  argv.push_back(executable);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

int runDoctorCli(const std::vector<std::string>& args, DoctorContext& ctx) {
  CLI::App app("distrun doctor: checks whether this allocation can train, node by node",
               "distrun doctor");
  DoctorOptions options;
  RawFlags raw;
  addFlags(app, options, raw);
  return parseAndRun(app, args, "distrun doctor", ctx.out, ctx.err, [&] {
    resolve(options, raw);
    if (raw.list) {
      writeCheckList(ctx.out);
      return 0;
    }
    const MapEnvironment env = cluster::withoutLeftovers(ctx.env);
    // An unknown --site is the user's mistake: refused before srun starts.
    cluster::selectSiteProfile(options.site, env, cluster::siteSearchPath(env, ctx.builtinSiteDir));
    if (!raw.here && outsideAStep(env)) {
      ctx.exec(srunOverAllocation(env, ctx.executable, args));
      return 0;  // not reached: exec replaces this process or throws
    }
    return check(options, env, ctx);
  });
}

}  // namespace distrun::doctor
