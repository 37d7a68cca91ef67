// Scaling efficiency of distrun's DDP measured inside one job, in short
// interleaved phases, so that the host's slow drift falls on every figure
// alike (bench/ddp-efficiency.sh; docs/training.md). Each rank builds the
// mnist workload (the CNN, FusedAdam, batch 64 a rank) and warms up; then
// every cycle runs these phases of --steps steps each, in an order that
// rotates by one each cycle:
//   pair         every rank trains, DDP averages the gradients
//   lockstep     every rank trains on its own (DDP's noSync), but the ranks
//                meet after every step (an all-reduce of one float)
//   independent  every rank trains on its own, at once
//   lone R       rank R trains on its own; the others wait, blocked
// Samples/s of a phase: the samples its ranks trained over its time; the
// cycle's efficiency is pair / the sum of the lone phases (the issue's
// "2 ranks against 2 x 1 rank"), the machine's own is independent / the
// same sum, and pair / independent is what training as one job costs:
// lockstep / independent the share of meeting every step (the slower
// rank's pace), pair / lockstep the share of averaging the gradients.
// Between phases the ranks meet in a barrier of a second communicator
// over TCP that blocks in the kernel (no spinning), so a waiting rank
// leaves its core idle, as when one rank runs alone.
//
//   distrun run --nproc-per-node 2 build/bin/ddp_efficiency_bench
//       [--data DIR] [--cycles N] [--steps K] [--warmup K] [--metrics PATH]
//
// Rank 0 prints one line a cycle and writes --metrics: {"runtime",
// "world_size", "batch_size", "steps_per_phase", "cycles": [{"pair",
// "lockstep", "independent", "lone": [per rank], "pair_wait_share": [per
// rank: its wait for averaged gradients over the pair's time]}]}, samples/s (the format of
// bench/peers/torch_ddp_efficiency.py). Exit codes as distrun-train's.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "distrun/comm/connect.h"
#include "distrun/common/command_line.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/train/ddp.h"
#include "distrun/train/freed_memory.h"
#include "distrun/train/metrics.h"
#include "distrun/train_app/workloads.h"

namespace {

using namespace distrun;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string data = "data";
  int64_t cycles = 12;
  int64_t steps = 20;
  int64_t warmup = 20;
  int64_t limitTrain = 3000;
  std::string metrics;
  train::DdpOptions ddp;
};

constexpr int64_t kBatch = 64;

// One phase: who trains, and whether DDP averages.
struct Phase {
  enum Kind { kPair, kLockstep, kIndependent, kLone } kind;
  int loneRank = -1;
  bool trains(int rank) const { return kind != kLone || rank == loneRank; }
};

std::vector<Phase> phasesOf(int world) {
  std::vector<Phase> phases{{Phase::kPair}, {Phase::kLockstep}, {Phase::kIndependent}};
  for (int r = 0; r < world; ++r) phases.push_back({Phase::kLone, r});
  return phases;
}

class Rank {
 public:
  Rank(train::Workload& w, comm::Communicator& world, const train::DdpOptions& options)
      : w_(w), world_(world), ddp_(*w.model, world, options) {}

  // `steps` steps of batch kBatch as `phase` trains.
  struct Timing {
    double seconds = 0;
    double waitSeconds = 0;  // end of backward -> gradients averaged
  };
  Timing trainSteps(int64_t steps, Phase::Kind phase) {
    std::optional<train::DistributedDataParallel::NoSyncGuard> alone;
    if (phase != Phase::kPair) alone.emplace(ddp_);
    const double waited = ddp_.stats().totalWaitSeconds;
    const auto start = Clock::now();
    float meet = 0;
    for (int64_t s = 0; s < steps; ++s) {
      step();
      if (phase == Phase::kLockstep) world_.allreduce(&meet, 1, comm::ReduceOp::kSum);
    }
    return {std::chrono::duration<double>(Clock::now() - start).count(),
            ddp_.stats().totalWaitSeconds - waited};
  }

 private:
  void step() {
    const int64_t n = w_.train.size();
    const int64_t first = ((next_++ * world_.size() + world_.rank()) * kBatch) % (n - kBatch + 1);
    w_.optimizer->zero_grad();
    w_.loss(w_.forward(w_.train.inputs.narrow(0, first, kBatch)),
            w_.train.targets.narrow(0, first, kBatch))
        .backward();
    w_.optimizer->step();
  }

  train::Workload& w_;
  comm::Communicator& world_;
  int64_t next_ = 0;
  train::DistributedDataParallel ddp_;
};

// One cycle's timings, every rank's, summed over the ranks into place:
// [phase * world + rank] seconds, then [phases * world + rank] the seconds
// the rank waited for averaged gradients in the pair phase.
using CycleTimes = std::vector<double>;

// Samples/s of each phase of one cycle, and the pair's waits as a share
// of its time.
nlohmann::json cycleRates(const std::vector<Phase>& phases, const CycleTimes& times, int world,
                          int64_t steps) {
  const size_t ws = static_cast<size_t>(world);
  const double samples = static_cast<double>(steps * kBatch);
  nlohmann::json c{{"lone", std::vector<double>(ws)}, {"pair_wait_share", std::vector<double>(ws)}};
  for (size_t p = 0; p < phases.size(); ++p) {
    const auto first = times.begin() + static_cast<std::ptrdiff_t>(p * ws);
    const double slowest = *std::max_element(first, first + world);
    switch (phases[p].kind) {
      case Phase::kPair:
        c["pair"] = samples * world / slowest;
        for (size_t r = 0; r < ws; ++r) {
          c["pair_wait_share"][r] = times[phases.size() * ws + r] / slowest;
        }
        break;
      case Phase::kLockstep:
        c["lockstep"] = samples * world / slowest;
        break;
      case Phase::kIndependent: {
        double rate = 0;  // each rank at its own pace
        for (size_t r = 0; r < ws; ++r) rate += samples / times[p * ws + r];
        c["independent"] = rate;
        break;
      }
      case Phase::kLone:
        c["lone"][static_cast<size_t>(phases[p].loneRank)] = samples / slowest;
    }
  }
  return c;
}

// Runs one cycle's phases, starting at phase `first`; every rank's times.
CycleTimes runCycle(Rank& rank, comm::Communicator& meet, const std::vector<Phase>& phases,
                    size_t first, int64_t steps) {
  const size_t n = phases.size(), ws = static_cast<size_t>(meet.size());
  const size_t me = static_cast<size_t>(meet.rank());
  CycleTimes times((n + 1) * ws, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const size_t p = (first + i) % n;
    meet.barrier();
    if (!phases[p].trains(meet.rank())) continue;
    const Rank::Timing t = rank.trainSteps(steps, phases[p].kind);
    times[p * ws + me] = t.seconds;
    if (phases[p].kind == Phase::kPair) times[n * ws + me] = t.waitSeconds;
  }
  meet.allreduce(times.data(), times.size(), comm::ReduceOp::kSum);
  return times;
}

std::string cycleLine(const nlohmann::json& c, int64_t cycle, int64_t cycles) {
  double lone = 0;
  for (double r : c["lone"]) lone += r;
  std::string waits;
  for (double w : c["pair_wait_share"]) {
    waits += fmt::format("{}{:.1f}", waits.empty() ? "" : "/", w * 100);
  }
  const double pair = c["pair"], lockstep = c["lockstep"], independent = c["independent"];
  return fmt::format(
      "cycle {}/{}  pair {:.1f}  lockstep {:.1f}  independent {:.1f}  "
      "lone sum {:.1f}  efficiency {:.3f}  machine's own {:.3f}  "
      "pair/independent {:.3f}  pair waits {}%",
      cycle, cycles, pair, lockstep, independent, lone, pair / lone, independent / lone,
      pair / independent, waits);
}

int run(const Args& a) {
  ProcessEnvironment env;
  train::keepFreedMemoryForReuse(env);
  at::set_num_threads(1);
  at::set_num_interop_threads(1);
  torch::manual_seed(0);
  train::Workload w = train::buildWorkload(
      "mnist", {.dataDir = a.data, .limitTrain = a.limitTrain, .limitTest = 1});
  if (w.train.size() < kBatch) {
    throw UsageError(
        fmt::format("--limit-train {}: expected at least {} samples", a.limitTrain, kBatch));
  }
  auto world = comm::connect(env, {.backend = "gloo", .timeout = {}, .name = "train"});
  const MapEnvironment blocking{{"DISTRUN_COMM_SHM", "0"}, {"DISTRUN_COMM_SPIN", "0"}};
  auto meet = comm::connect(OverlayEnvironment(env, blocking),
                            {.backend = "gloo", .timeout = {}, .name = "phases"});
  Rank rank(w, *world, a.ddp);
  rank.trainSteps(a.warmup, Phase::kPair);

  const std::vector<Phase> phases = phasesOf(world->size());
  nlohmann::json cycles = nlohmann::json::array();
  for (int64_t c = 0; c < a.cycles; ++c) {
    const size_t first = static_cast<size_t>(c) % phases.size();
    cycles.push_back(
        cycleRates(phases, runCycle(rank, *meet, phases, first, a.steps), world->size(), a.steps));
    if (world->rank() == 0) std::cout << cycleLine(cycles.back(), c + 1, a.cycles) << std::endl;
  }
  if (world->rank() == 0 && !a.metrics.empty()) {
    const nlohmann::json report{{"runtime", "distrun"},
                                {"world_size", world->size()},
                                {"batch_size", kBatch},
                                {"steps_per_phase", a.steps},
                                {"cycles", cycles}};
    train::writeMetricsText(a.metrics, report.dump() + "\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ddp_efficiency_bench: DDP's scaling efficiency in interleaved phases",
               "ddp_efficiency_bench");
  Args a;
  app.add_option("--data", a.data, "folder holding MNIST/raw");
  app.add_option("--cycles", a.cycles, "cycles of phases")->check(CLI::PositiveNumber);
  app.add_option("--steps", a.steps, "steps of each phase")->check(CLI::PositiveNumber);
  app.add_option("--warmup", a.warmup, "DDP steps before the first cycle")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--limit-train", a.limitTrain, "first N training samples")
      ->check(CLI::PositiveNumber);
  app.add_option("--bucket-cap-mb", a.ddp.bucketCapMb, "DDP's bucket size")
      ->check(CLI::PositiveNumber);
  bool noOverlap = false;
  app.add_flag("--no-overlap", noOverlap, "all-reduce the buckets after backward");
  app.add_option("--metrics", a.metrics, "write every cycle's samples/s as JSON here");
  return distrun::parseAndRun(app, std::vector<std::string>(argv + 1, argv + argc),
                              "ddp_efficiency_bench", std::cout, std::cerr, [&] {
                                a.ddp.overlap = !noOverlap;
                                return run(a);
                              });
}
