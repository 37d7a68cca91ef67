#pragma once

#include <string>

#include "distrun/comm/communicator.h"
#include "distrun/comm_bench/device_memory.h"
#include "distrun/comm_bench/options.h"
#include "distrun/comm_bench/report.h"

namespace distrun::comm_bench {

// What one bench run measures on: `measured` runs the collectives, on
// buffers in `memory` (null: host memory); `control`, on host memory,
// gathers the timings, the counts of wrong values and the rank table. On
// the CPU both are the one communicator.
struct BenchTarget {
  comm::Communicator& measured;
  comm::Communicator& control;
  DeviceMemory* memory = nullptr;
};

// Runs the sweep of options.collective on every rank (all ranks call it
// together) and returns the report, the same on every rank. For each type,
// op and size: warm-up, a timed loop whose mean time is reduced across
// ranks per -a, then -c checks counting wrong elements on all ranks;
// out-of-place first, then in-place.
BenchReport runCollectiveBench(const BenchTarget& target, const BenchOptions& options);
BenchReport runCollectiveBench(comm::Communicator& comm, const BenchOptions& options);

// Every rank's pid, host and device ("cpu", or DeviceMemory::describe()),
// gathered (all ranks call it).
std::vector<RankInfo> gatherRankInfo(comm::Communicator& comm, const std::string& device = "cpu");

// The trapezoid rule for pi = integral of 4/(1+x^2) over [0, 1] with
// `intervals` intervals, split across the ranks in contiguous ranges.
struct PiResult {
  double value = 0;
  double error = 0;    // |value - pi|
  double seconds = 0;  // slowest rank, compute and reduction
  long long intervals = 0;
  int ranks = 1;
};
PiResult computePi(comm::Communicator& comm, long long intervals);
void writePi(std::ostream& out, const PiResult& pi, const std::string& format,
             const std::string& backend);

}  // namespace distrun::comm_bench
