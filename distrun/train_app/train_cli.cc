#include "distrun/train_app/train_cli.h"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/utils.h>
#include <CLI/CLI.hpp>

#include "distrun/cluster/leftovers.h"
#include "distrun/cluster/this_task.h"
#include "distrun/comm/connect.h"
#include "distrun/common/command_line.h"
#include "distrun/common/error.h"
#include "distrun/common/exit_code.h"
#include "distrun/common/system.h"
#include "distrun/train/freed_memory.h"
#include "distrun/train_app/blas_check.h"
#include "distrun/train_app/train_flags.h"
#include "distrun/train_app/workloads.h"

namespace distrun::train {

namespace {

// Raised by SIGUSR1 (Slurm's warning before the time limit, forwarded by
// distrun run): the Trainer reads it at step boundaries. A lock-free atomic
// is async-signal-safe.
std::atomic<bool> checkpointRequested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void requestCheckpoint(int) { checkpointRequested.store(true); }

// SA_RESTART: a signal landing in a blocking call resumes it.
void catchCheckpointSignal() {
  struct sigaction action {};
  action.sa_handler = requestCheckpoint;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (::sigaction(SIGUSR1, &action, nullptr) != 0) {
    throw SystemError("sigaction", "SIGUSR1", errno);
  }
}

// How often the ranks agree on the flag: every step (docs/training.md,
// "Preemption", has the measured cost).
constexpr int64_t kCheckpointCheckEvery = 1;

int cpusOfThisProcess() { return static_cast<int>(usableCpus().size()); }

void configureTorch(const TrainFlags& a) {
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

WorkloadOptions workloadOptions(const TrainFlags& a, const Environment& env) {
  return {.dataDir = mnistFolder(a, env),
          .learningRate = a.learningRate,
          .limitTrain = a.limitTrain,
          .limitTest = a.limitTest,
          .seed = a.seed};
}

// A resumed snapshot that had finished every epoch asked for.
void reportNothingLeft(const Trainer& trainer, int64_t epochs, std::ostream& out) {
  out << fmt::format(
             "distrun-train: nothing left to train: the snapshot {} finished epoch {} and "
             "--epochs is {}: raise --epochs to train more",
             trainer.resumedFrom().value_or("?"), trainer.startEpoch(), epochs)
      << std::endl;
}

// The job asked for a checkpoint and has one: exit 79 asks the batch
// script to requeue it.
int reportCheckpointed(const Trainer& trainer, const std::string& snapshot, int rank,
                       std::ostream& out) {
  if (rank == 0) {
    const CheckpointStop& at = *trainer.checkpointedAt();
    out << fmt::format(
               "distrun-train: SIGUSR1: wrote the snapshot {} at epoch {} step {}; exit {} "
               "(requeue to resume)",
               snapshot, at.epoch + 1, at.step, toInt(ExitCode::kCheckpointed))
        << std::endl;
  }
  return toInt(ExitCode::kCheckpointed);
}

int train(const TrainFlags& a, TrainCliContext& ctx) {
  checkTrainFlags(a);
  catchCheckpointSignal();
  // What an earlier eval "$(distrun env)" left is not this rank's identity.
  const MapEnvironment env = cluster::withoutLeftovers(ctx.env);
  if (!a.returnFreedMemory) keepFreedMemoryForReuse(env);
  configureTorch(a);
  const ProgressStyle progress = parseProgressStyle(a.progress);
  Workload workload = buildWorkload(a.workload, workloadOptions(a, env));
  std::optional<DerivedRankEnvironment> derived;
  // The mpi backend needs none: MPI itself says who is who.
  const std::string backend = comm::resolveBackend(env, a.backend);
  if (backend != "mpi" && !env.has("RANK") && !env.has("DISTRUN_STORE")) {
    derived.emplace(env);
  }
  const Environment& rankEnv = derived ? static_cast<const Environment&>(derived->env) : env;
  std::unique_ptr<comm::Communicator> comm =
      comm::connect(rankEnv, {.backend = backend, .timeout = {}, .name = "train"});
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
      .checkpointRequest = &checkpointRequested,
      .checkpointCheckEvery = kCheckpointCheckEvery,
  };
  if (comm->rank() == 0) warnOfSlowBlas(ctx.err);
  const auto start = std::chrono::steady_clock::now();
  Trainer trainer(workload.task(), *comm, options, ctx.out, ctx.err);
  const bool ranEpochs = !trainer.run().empty();
  if (trainer.checkpointedAt())
    return reportCheckpointed(trainer, a.snapshot, comm->rank(), ctx.out);
  if (!ranEpochs) {
    if (comm->rank() == 0) reportNothingLeft(trainer, options.epochs, ctx.out);
    return 0;
  }
  if (comm->rank() == 0 && progress != ProgressStyle::kNone && !trainer.history().empty()) {
    const EpochMetrics& last = trainer.history().back();
    ctx.out << fmt::format(
        "distrun-train: {} on {} rank{}, {} epochs in {:.1f} s", a.workload, comm->size(),
        comm->size() == 1 ? "" : "s", last.epoch,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (last.testAccuracy)
      ctx.out << fmt::format(": test accuracy {:.2f}%", *last.testAccuracy * 100);
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
  TrainFlags a;
  addTrainFlags(app, a);
  return parseAndRun(app, args, "distrun-train", ctx.out, ctx.err, [&] { return train(a, ctx); });
}

}  // namespace distrun::train
