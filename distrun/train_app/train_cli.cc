#include "distrun/train_app/train_cli.h"

#include <chrono>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <torch/utils.h>

#include "distrun/cluster/this_task.h"
#include "distrun/comm/connect.h"
#include "distrun/common/command_line.h"
#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/train_app/blas_check.h"
#include "distrun/train/freed_memory.h"
#include "distrun/train_app/workloads.h"

namespace distrun::train {

namespace {

struct TrainArgs {
  std::string workload;
  WorkloadOptions data;
  std::optional<int64_t> epochs;     // unset: the workload's default
  std::optional<int64_t> batchSize;  // unset: the workload's default
  uint64_t seed = 0;
  int threadsPerRank = 0;    // 0: the CPUs this rank may use
  bool deterministic = false;
  std::string snapshot;
  int64_t saveEvery = 1;
  int64_t saveEverySteps = 0;
  std::string metrics;
  double bucketCapMb = 25;
  bool noOverlap = false;
  bool balanceLoad = false;
  bool returnFreedMemory = false;
  std::string progress = "auto";
  std::string backend = "gloo";
};

void addFlags(CLI::App& app, TrainArgs& a) {
  app.add_option("workload", a.workload, "mnist (the seeds' CNN) or linear (the seeds' trainer)")
      ->required();
  app.add_option("--data", a.data.dataDir,
                 "folder holding MNIST/raw (torchvision's layout; default: $DISTRUN_DATA or data)");
  app.add_option("--epochs", a.epochs, "epochs to train (default: mnist 6, linear 10)");
  app.add_option("--batch-size", a.batchSize, "samples per rank per step (default: mnist 64, linear 32)");
  app.add_option("--lr", a.data.learningRate, "learning rate (default: 1e-3)");
  app.add_option("--seed", a.seed, "model initialisation, shuffling and synthetic data (default 0)");
  app.add_option("--threads-per-rank", a.threadsPerRank,
                 "intra-op threads of each rank (default: the CPUs it is bound to)");
  app.add_flag("--deterministic", a.deterministic,
               "deterministic kernels only, DDP buckets never rebuilt: a resumed run ends bitwise equal "
               "to an uninterrupted one");
  app.add_option("--snapshot", a.snapshot, "snapshot file: resumed from when present, written by rank 0");
  app.add_option("--save-every", a.saveEvery, "snapshot every N epochs (default 1; 0: never)");
  app.add_option("--save-every-steps", a.saveEverySteps, "also snapshot every N steps (default 0: never)");
  app.add_option("--metrics", a.metrics, "write every epoch's metrics as JSON to this file (rank 0)");
  app.add_option("--bucket-cap-mb", a.bucketCapMb, "gradient bucket size in MB (default 25)");
  app.add_flag("--no-overlap", a.noOverlap, "all-reduce after backward instead of during it");
  app.add_flag("--balance-load", a.balanceLoad,
               "split each step's samples among the ranks by their measured speed "
               "(not reproducible; not with --deterministic)");
  app.add_flag("--return-freed-memory", a.returnFreedMemory,
               "give freed tensors' memory back to the kernel as glibc does by default "
               "(smaller resident size, slower steps)");
  app.add_option("--limit-train", a.data.limitTrain, "use only the first N training samples");
  app.add_option("--limit-test", a.data.limitTest, "use only the first N test samples");
  app.add_option("--progress", a.progress, "auto, bar, epochs or none (default auto: bar on a terminal)");
  app.add_option("--backend", a.backend, "gloo (default) or mpi (under mpirun)");
}

int cpusOfThisProcess() { return static_cast<int>(usableCpus().size()); }

void configureTorch(const TrainArgs& a) {
  if (a.threadsPerRank < 0) {
    throw UsageError(fmt::format("--threads-per-rank {}: expected 1 or more", a.threadsPerRank));
  }
  if (a.deterministic && a.balanceLoad) {
    throw UsageError(
        "--balance-load with --deterministic: the split of each step follows the ranks' timing, "
        "so runs cannot repeat bit for bit; choose one");
  }
  at::set_num_threads(a.threadsPerRank > 0 ? a.threadsPerRank : cpusOfThisProcess());
  at::set_num_interop_threads(1);
  at::globalContext().setDeterministicAlgorithms(a.deterministic, /*warn_only=*/false);
  torch::manual_seed(a.seed);
}

void warnOfSlowBlas(std::ostream& err) {
  if (std::optional<std::string> path = blasLibraryPath()) {
    if (auto warning = slowBlasWarning(*path)) err << *warning << std::endl;
  }
}

// The rank variables of a rank started without them. srun, mpirun or qsub
// ran distrun-train directly as one of several tasks: it takes its place
// in their job as `distrun exec` would place it. Alone (no scheduler's job,
// an allocation's shell): a world of one on a store of its own.
MapEnvironment rankVariables(const Environment& env) {
  cluster::ThisTaskOptions options;
  options.loneTaskStore = cluster::LoneTaskStore::kPrivate;
  return cluster::thisTask(env, readHostFacts(), options).variables();
}

struct DerivedRankEnvironment {
  explicit DerivedRankEnvironment(const Environment& base)
      : rank(rankVariables(base)), env(base, rank) {}
  MapEnvironment rank;
  OverlayEnvironment env;
};

int train(TrainArgs& a, TrainCliContext& ctx) {
  if (a.data.dataDir.empty()) a.data.dataDir = ctx.env.get("DISTRUN_DATA").value_or("data");
  if (!a.returnFreedMemory) keepFreedMemoryForReuse(ctx.env);
  configureTorch(a);
  const ProgressStyle progress = parseProgressStyle(a.progress);
  a.data.seed = a.seed;
  Workload workload = buildWorkload(a.workload, a.data);
  std::optional<DerivedRankEnvironment> derived;
  // --backend mpi needs none: MPI itself says who is who.
  if (a.backend != "mpi" && !ctx.env.has("RANK") &&
      !ctx.env.has("DISTRUN_STORE")) {
    derived.emplace(ctx.env);
  }
  std::unique_ptr<comm::Communicator> comm = comm::connect(
      derived ? derived->env : ctx.env, {.backend = a.backend, .timeout = {}, .name = "train"});
  TrainerOptions options{
      .epochs = a.epochs.value_or(workload.defaultEpochs),
      .batchSize = a.batchSize.value_or(workload.defaultBatchSize),
      .seed = a.seed,
      .dropLast = false,
      .snapshotPath = a.snapshot,
      .saveEveryEpochs = a.saveEvery,
      .saveEverySteps = a.saveEverySteps,
      .metricsPath = a.metrics,
      .progress = progress,
      .threadsPerRank = at::get_num_threads(),
      .balanceLoad = a.balanceLoad,
      .ddp = {.bucketCapMb = a.bucketCapMb,
              .firstBucketMb = 1,
              .overlap = !a.noOverlap,
              .rebuildBuckets = !a.deterministic},
  };
  if (comm->rank() == 0) warnOfSlowBlas(ctx.err);
  const auto start = std::chrono::steady_clock::now();
  Trainer trainer(workload.task(), *comm, options, ctx.out, ctx.err);
  trainer.run();
  if (comm->rank() == 0 && progress != ProgressStyle::kNone && !trainer.history().empty()) {
    const EpochMetrics& last = trainer.history().back();
    ctx.out << fmt::format("distrun-train: {} on {} rank{}, {} epochs in {:.1f} s", a.workload,
                           comm->size(), comm->size() == 1 ? "" : "s", last.epoch,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (last.testAccuracy) ctx.out << fmt::format(": test accuracy {:.2f}%", *last.testAccuracy * 100);
    ctx.out << std::endl;
  }
  if (comm->rank() == 0 && progress != ProgressStyle::kNone) {
    ctx.out << fmt::format("distrun-train: parameters identical on all {} ranks: crc32 {:08x}",
                           comm->size(), trainer.parameterChecksum())
            << std::endl;
  }
  return 0;
}

}  // namespace

int runTrainCli(const std::vector<std::string>& args, TrainCliContext& ctx) {
  CLI::App app("distrun-train: one rank of a data-parallel training run (docs/training.md)",
               "distrun-train");
  TrainArgs a;
  a.data.dataDir.clear();
  addFlags(app, a);
  return parseAndRun(app, args, "distrun-train", ctx.out, ctx.err, [&] { return train(a, ctx); });
}

}  // namespace distrun::train
