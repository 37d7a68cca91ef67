#include "distrun/comm_bench/bench_cli.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "distrun/cluster/leftovers.h"
#include "distrun/cluster/this_task.h"
#include "distrun/comm/connect.h"
#include "distrun/comm_bench/collectives.h"
#include "distrun/comm_bench/gpu_bench.h"
#include "distrun/comm_bench/options.h"
#include "distrun/comm_bench/runner.h"
#include "distrun/common/command_line.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/launch/agent.h"
#include "distrun/launch/run_options.h"

namespace distrun::comm_bench {

namespace {

struct RawFlags {
  std::string minBytes = "1K";
  std::string maxBytes = "32M";
  std::string stepBytes;
  std::string datatype = "float";
  std::string op = "sum";
  bool dryRun = false;
};

// nccl-tests' GPUs per thread (-g) and threads per process (-t): a
// distrun rank is a process of its own, so each is a usage error, at
// once, before the parser asks for anything else.
void refuseThreadFlag(CLI::App& app, const std::string& names, const std::string& what) {
  app.add_option_function<std::string>(
         names,
         [names, what](const std::string&) -> void {
           throw UsageError(fmt::format(
               "{} (nccl-tests' {}) is not a distrun bench flag: ranks are processes: use "
               "--nproc-per-node (distrun run) or srun/mpirun tasks",
               names.substr(0, 2), what));
         })
      ->expected(0, 1)
      ->trigger_on_parse()
      ->group("");
}

void addFlags(CLI::App& app, BenchOptions& o, RawFlags& raw) {
  app.add_option("COLLECTIVE", o.collective,
                 "all_reduce, broadcast, all_gather, reduce_scatter, alltoall, sendrecv, or pi")
      ->required();
  app.add_option("-b,--minbytes", raw.minBytes, "smallest size, K/M/G suffixes (default 1K)");
  app.add_option("-e,--maxbytes", raw.maxBytes, "largest size (default 32M)");
  app.add_option("-i,--stepbytes", raw.stepBytes, "add this many bytes per step (instead of -f)");
  app.add_option("-f,--stepfactor", o.stepFactor, "multiply the size by this per step (default 2)");
  app.add_option("-n,--iters", o.iters, "timed iterations per size (default 20)");
  app.add_option("-w,--warmup_iters", o.warmupIters, "untimed iterations first (default 5)");
  app.add_option("-c,--check", o.checkIters, "checking iterations; 0 disables #wrong (default 1)");
  app.add_option("-d,--datatype", raw.datatype,
                 "float, double, half, bfloat16, int32, int64 or all");
  app.add_option("-o,--op", raw.op, "sum, prod, min, max, avg or all");
  app.add_option("-a,--average", o.average, "time across ranks: 0 rank 0, 1 mean, 2 min, 3 max");
  app.add_option("-r,--root", o.root, "root rank of broadcast (default 0)");
  app.add_option("-T,--timeout", o.timeoutSeconds,
                 "seconds an operation may wait for a peer (300)");
  app.add_option("--format", o.format, "table (nccl-tests), json or csv");
  app.add_option("--backend", o.backend,
                 "auto (default: mpi across nodes under mpirun, else gloo; nccl with --device "
                 "cuda), gloo, mpi, nccl or rccl");
  app.add_option("--device", o.device,
                 "cpu (default) or cuda: buffers on each rank's GPU (cuda:LOCAL_RANK)");
  app.add_option("--nproc-per-node", o.nprocPerNode, "local ranks when run bare (default 2)");
  app.add_option("--intervals", o.piIntervals, "pi: trapezoid intervals (default 1e8)");
  app.add_flag("--dry-run", raw.dryRun,
               "check the flags, say what would be measured, measure nothing");
  refuseThreadFlag(app, "-g,--ngpus", "GPUs per thread");
  refuseThreadFlag(app, "-t,--nthreads", "threads per process");
}

template <class T, class Parse, class All>
std::vector<T> parseList(const std::string& text, Parse parse, const All& all, const char* flag) {
  if (text == "all") return std::vector<T>(std::begin(all), std::end(all));
  std::vector<T> values;
  for (const std::string& part : split(text, ',')) values.push_back(parse(part, flag));
  return values;
}

void resolve(BenchOptions& o, const RawFlags& raw) {
  o.minBytes = parseBytes(raw.minBytes, "-b");
  o.maxBytes = parseBytes(raw.maxBytes, "-e");
  if (!raw.stepBytes.empty()) {
    o.stepBytes = parseBytes(raw.stepBytes, "-i");
    o.stepFactor = 0;  // -i given: additive steps, as nccl-tests
  }
  o.types = parseList<comm::DataType>(raw.datatype, comm::parseDataType, comm::kAllDataTypes, "-d");
  o.ops = parseList<comm::ReduceOp>(raw.op, comm::parseReduceOp, comm::kAllReduceOps, "-o");
  if (o.collective != "pi") o.collective = std::string(nameOf(parseCollective(o.collective)));
  validate(o);
}

// What the parser left (allow_extras): an unknown flag, named with the
// nearest one, or a second COLLECTIVE.
void refuseExtras(const CLI::App& app) {
  const std::string flag = firstUnknownFlag(app);
  if (!flag.empty()) throw UsageError(unknownFlagMessage(app, flag, "distrun bench"));
  const std::vector<std::string> extra = app.remaining();
  if (!extra.empty()) {
    throw UsageError(
        fmt::format("unexpected argument '{}': distrun bench takes one COLLECTIVE", extra.front()));
  }
}

// The sweep on `target`, its report written by rank 0.
int sweep(const BenchOptions& o, const BenchTarget& target, BenchContext& ctx) {
  const comm::Communicator& comm = target.measured;
  if (o.root >= comm.size()) {
    throw UsageError(fmt::format("-r {} is not a rank of this {}-rank job", o.root, comm.size()));
  }
  BenchReport report = runCollectiveBench(target, o);
  if (comm.rank() == 0) {
    if (o.format == "json")
      writeJson(ctx.out, report);
    else if (o.format == "csv")
      writeCsv(ctx.out, report);
    else
      writeTable(ctx.out, report);
    ctx.out.flush();
  }
  if (report.wrongTotal() > 0) {
    if (comm.rank() == 0) {
      ctx.err << fmt::format("distrun bench: {} wrong values: the {} backend returned bad data\n",
                             report.wrongTotal(), report.backend);
    }
    return 1;
  }
  return 0;
}

// Measures as one rank of the job described by `env`.
int measureAsRank(const BenchOptions& o, const Environment& env, BenchContext& ctx) {
  comm::ConnectOptions connect{
      .backend = o.backend, .timeout = std::chrono::seconds(o.timeoutSeconds), .name = "bench"};
  if (o.device == "cuda") {
    std::unique_ptr<GpuBench> gpu = connectGpuBench(env, benchBackend(o), connect);
    return sweep(o, gpu->target(), ctx);
  }
  std::unique_ptr<comm::Communicator> comm = comm::connect(env, connect);
  if (o.collective == "pi") {
    PiResult pi = computePi(*comm, o.piIntervals);
    if (comm->rank() == 0) writePi(ctx.out, pi, o.format, std::string(comm->backend()));
    return 0;
  }
  return sweep(o, BenchTarget{*comm, *comm, nullptr}, ctx);
}

// Bare: `distrun run --nproc-per-node N` over this very command.
int selfLaunch(const BenchOptions& o, const std::vector<std::string>& args, const Environment& env,
               BenchContext& ctx) {
  if (o.backend == "mpi") {
    throw UsageError(fmt::format(
        "--backend mpi needs an MPI launcher: mpirun -np {} distrun bench {} --backend mpi",
        o.nprocPerNode, o.collective));
  }
  launch::RunOptions run;
  // On a GPU, one rank a GPU unless told otherwise (torchrun's
  // --nproc-per-node gpu).
  const bool oneRankAGpu = o.device == "cuda" && !o.nprocGiven;
  run.nprocPerNode =
      std::to_string(oneRankAGpu ? visibleGpus(env, benchBackend(o)) : o.nprocPerNode);
  run.standalone = true;
  run.logPrefix = "";
  // Each rank on a core of its own, as `distrun run` places them, where
  // the collectives go through shared memory: unbound, the ranks of a
  // 2-core machine were at times queued on one CPU for whole sizes (perf
  // sched). Through TCP (DISTRUN_COMM_SHM=0) Gloo's transport
  // runs a thread of its own beside each rank's: pinning a rank to one core
  // makes the two take turns at the scheduler's tick.
  run.cpuBind = env.get("DISTRUN_COMM_SHM") == "0" ? "none" : "cores";
  run.program.push_back(ctx.executable);
  run.program.insert(run.program.end(), args.begin(), args.end());
  launch::RunContext context{env, ctx.hostFacts(), usableCpus(), ctx.builtinSiteDir,
                             0,   std::nullopt};
  return launch::Agent(launch::resolveAgentConfig(run, context), env, ctx.err).run();
}

// `env`: the user's environment (cluster::withoutLeftovers), without what an
// earlier eval "$(distrun env)" left, so a bare bench starts its own world.
int dispatch(const BenchOptions& o, const std::vector<std::string>& args, const Environment& env,
             BenchContext& ctx) {
  if (o.device == "cpu" && comm::resolveBackend(env, o.backend) == "mpi") {
    return comm::launchedByMpi(env) ? measureAsRank(o, env, ctx) : selfLaunch(o, args, env, ctx);
  }
  if (env.get("RANK") && env.get("WORLD_SIZE")) return measureAsRank(o, env, ctx);
  // A task of a job srun, mpirun or qsub started: its rank variables as
  // `distrun exec` would set them, without a site profile.
  const cluster::ThisTask task = cluster::thisTask(env, ctx.hostFacts());
  if (task.layout.worldSize > 1) {
    const MapEnvironment vars = task.variables();
    return measureAsRank(o, OverlayEnvironment(env, vars), ctx);
  }
  return selfLaunch(o, args, env, ctx);
}

// --dry-run's one line: what the flags ask for.
std::string plannedRun(const BenchOptions& o) {
  if (o.collective == "pi") {
    return fmt::format("distrun bench: pi with {} intervals: nothing run (--dry-run)\n",
                       o.piIntervals);
  }
  const std::vector<size_t> sizes = sweepSizes(o);
  return fmt::format(
      "distrun bench: {}, {} sizes from {} to {} bytes, {} iterations after {} warm-up, backend "
      "{}: nothing measured (--dry-run)\n",
      o.collective, sizes.size(), sizes.front(), sizes.back(), o.iters, o.warmupIters,
      o.device == "cuda" ? benchBackend(o) + " on cuda" : o.backend);
}

}  // namespace

int runBenchCli(const std::vector<std::string>& args, BenchContext& ctx) {
  CLI::App app("distrun bench: collective benchmark in nccl-tests' format, and the pi smoke test",
               "distrun bench");
  BenchOptions options;
  RawFlags raw;
  addFlags(app, options, raw);
  app.allow_extras();  // refused by refuseExtras, before anything else
  return parseAndRun(app, args, "distrun bench", ctx.out, ctx.err, [&] {
    refuseExtras(app);
    options.nprocGiven = app.count("--nproc-per-node") > 0;
    resolve(options, raw);
    if (raw.dryRun) {
      ctx.out << plannedRun(options);
      return 0;
    }
    return dispatch(options, args, cluster::withoutLeftovers(ctx.env), ctx);
  });
}

}  // namespace distrun::comm_bench
