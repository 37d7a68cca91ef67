#include "distrun/train_app/train_flags.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "distrun/comm/backend_choice.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::train {

namespace {

void addDataFlags(CLI::App& app, TrainFlags& f) {
  app.add_option("workload", f.workload,
                 "mnist (PyTorch's MNIST example network) or linear (the PyTorch DDP "
                 "tutorial's Trainer)")
      ->required();
  app.add_option("--data", f.dataDir,
                 "folder holding MNIST/raw (torchvision's layout; default: "
                 "$DISTRUN_DATA or data)");
  app.add_option("--epochs", f.epochs, "epochs to train (default: mnist 6, linear 10)");
  app.add_option("--batch-size", f.batchSize,
                 "samples per rank per step (default: mnist 64, linear 32)");
  app.add_option("--lr", f.learningRate, "learning rate (default: 1e-3)");
  app.add_option("--seed", f.seed,
                 "model initialisation, shuffling and synthetic data (default 0)");
  app.add_option("--limit-train", f.limitTrain, "use only the first N training samples");
  app.add_option("--limit-test", f.limitTest, "use only the first N test samples");
}

void addRunFlags(CLI::App& app, TrainFlags& f) {
  app.add_option("--threads-per-rank", f.threadsPerRank,
                 "intra-op threads of each rank (default: the CPUs it is bound to)");
  app.add_flag("--deterministic", f.deterministic,
               "deterministic kernels only, DDP buckets never rebuilt: a "
               "resumed run ends bitwise equal to an uninterrupted one");
  app.add_option("--snapshot", f.snapshot,
                 "snapshot file: resumed from when present, written by rank 0");
  app.add_option("--save-every", f.saveEvery, "snapshot every N epochs (default 1; 0: never)");
  app.add_option("--save-every-steps", f.saveEverySteps,
                 "also snapshot every N steps (default 0: never)");
  app.add_option("--metrics", f.metrics,
                 "write every epoch's metrics as JSON to this file (rank 0)");
  app.add_option("--bucket-cap-mb", f.bucketCapMb, "gradient bucket size in MB (default 25)");
  app.add_flag("--no-overlap", f.noOverlap, "all-reduce after backward instead of during it");
  app.add_flag("--balance-load", f.balanceLoad,
               "split each step's samples among the ranks by their measured speed "
               "(not reproducible; not with --deterministic)");
  app.add_flag("--return-freed-memory", f.returnFreedMemory,
               "give freed tensors' memory back to the kernel as glibc does by default "
               "(smaller resident size, slower steps)");
  app.add_option("--progress", f.progress,
                 "auto, bar, epochs or none (default auto: bar on a terminal)");
  app.add_option("--backend", f.backend,
                 "auto (default: mpi across nodes under mpirun, else gloo), gloo or mpi");
}

void checkAtLeast(const char* flag, std::optional<int64_t> value, int64_t least) {
  if (value && *value < least) {
    throw UsageError(fmt::format("{} {}: expected at least {}", flag, *value, least));
  }
}

void checkNeverOrMore(const char* flag, int64_t value) {
  if (value < 0) {
    throw UsageError(fmt::format("{} {}: expected 0 (never) or more", flag, value));
  }
}

void checkCounts(const TrainFlags& f) {
  checkAtLeast("--epochs", f.epochs, 1);
  checkAtLeast("--batch-size", f.batchSize, 1);
  checkNeverOrMore("--save-every", f.saveEvery);
  checkNeverOrMore("--save-every-steps", f.saveEverySteps);
  if (f.threadsPerRank < 0) {
    throw UsageError(
        fmt::format("--threads-per-rank {}: expected 1 or more (or 0: one per "
                    "CPU the rank may use)",
                    f.threadsPerRank));
  }
  if (!(f.bucketCapMb > 0)) {
    throw UsageError(fmt::format("--bucket-cap-mb {}: expected more than 0", f.bucketCapMb));
  }
}

void checkChoices(const TrainFlags& f) {
  comm::checkBackendName(f.backend, "--backend");
  if (f.progress != "auto" && f.progress != "bar" && f.progress != "epochs" &&
      f.progress != "none") {
    throw UsageError(
        fmt::format("--progress '{}': expected auto, bar, epochs or none", f.progress));
  }
  if (f.deterministic && f.balanceLoad) {
    throw UsageError(
        "--balance-load with --deterministic: the split of each step follows "
        "the ranks' timing, so runs cannot repeat bit for bit; choose one");
  }
}

}  // namespace

void addTrainFlags(CLI::App& app, TrainFlags& flags) {
  addDataFlags(app, flags);
  addRunFlags(app, flags);
}

void checkWorkload(const std::string& name) {
  const std::vector<std::string>& known = workloadNames();
  if (std::find(known.begin(), known.end(), name) != known.end()) return;
  std::optional<std::string> near = closestName(name, known);
  throw UsageError(fmt::format("workload '{}': expected {}{}", name, fmt::join(known, " or "),
                               near ? " (did you mean " + *near + "?)" : ""));
}

const std::vector<std::string>& workloadNames() {
  static const std::vector<std::string> names = {"mnist", "linear"};
  return names;
}

std::string mnistFolder(const TrainFlags& flags, const Environment& env) {
  if (!flags.dataDir.empty()) return flags.dataDir;
  return env.get("DISTRUN_DATA").value_or("data");
}

void checkTrainFlags(const TrainFlags& flags) {
  checkWorkload(flags.workload);
  checkCounts(flags);
  checkChoices(flags);
}

}  // namespace distrun::train
