#pragma once

// The command line of `distrun-train` (docs/training.md): WORKLOAD and its
// flags, as CLI11 declarations and checks. Free of LibTorch, so that
// `distrun train` (which links none) knows which flags after the workload
// are distrun-train's and which are the launcher's.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distrun/common/environment.h"

namespace CLI {
class App;
}  // namespace CLI

namespace distrun::train {

// The flags as given; defaults as documented in docs/training.md.
struct TrainFlags {
  std::string workload;
  std::string dataDir;               // "": $DISTRUN_DATA, else data
  std::optional<int64_t> epochs;     // unset: the workload's default
  std::optional<int64_t> batchSize;  // unset: the workload's default
  double learningRate = 0;           // 0: the workload's default
  uint64_t seed = 0;
  int threadsPerRank = 0;  // 0: the CPUs this rank may use
  bool deterministic = false;
  std::string snapshot;
  int64_t saveEvery = 1;
  int64_t saveEverySteps = 0;
  std::string metrics;
  double bucketCapMb = 25;
  bool noOverlap = false;
  bool balanceLoad = false;
  bool returnFreedMemory = false;
  int64_t limitTrain = 0;  // 0: all
  int64_t limitTest = 0;   // 0: all
  std::string progress = "auto";
  std::string backend = "auto";
};

// Declares WORKLOAD and every flag of distrun-train on `app`, bound to
// `flags` (which must outlive the parse).
void addTrainFlags(CLI::App& app, TrainFlags& flags);

// Throws UsageError naming the flag (`--batch-size 0: expected at least
// 1`) for a value the training library would refuse, or for flags that
// exclude each other; so the user reads the flag they typed, not the
// library option it sets.
// The workload is one of workloadNames(), else UsageError with the nearest
// ("workload 'mnsit': expected mnist or linear (did you mean mnist?)").
void checkTrainFlags(const TrainFlags& flags);

// The built-in workloads.
const std::vector<std::string>& workloadNames();

// UsageError unless `name` is one of workloadNames(), naming the nearest.
void checkWorkload(const std::string& name);

// The folder MNIST is read from: --data, else $DISTRUN_DATA, else "data".
std::string mnistFolder(const TrainFlags& flags, const Environment& env);

}  // namespace distrun::train
