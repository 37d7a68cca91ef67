#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace distrun::comm_bench {

// One half of a result row: out-of-place or in-place.
struct Measurement {
  double timeUs = 0;               // mean time per operation, reduced across ranks (-a)
  double algBw = 0;                // GB/s (decimal): bytes / time
  double busBw = 0;                // GB/s: algBw * the collective's factor
  std::optional<long long> wrong;  // elements wrong on all ranks; unset: -c 0
};

struct ResultRow {
  size_t bytes = 0;
  size_t count = 0;
  std::string type;
  std::string redop;  // "none" for data movement
  int root = -1;      // -1 for rootless collectives
  Measurement outOfPlace;
  Measurement inPlace;
};

struct RankInfo {
  int rank = 0;
  long pid = 0;
  std::string host;
  std::string device = "cpu";  // or "cuda:0 [0000:17:00.0]"
};

// Everything a reporter prints: the run's settings, the ranks, the rows.
struct BenchReport {
  std::string collective;  // nccl-tests name, e.g. all_reduce
  std::string backend;
  std::string transport;   // Communicator::transport(); may be empty
  std::string reductions;  // the reduction kernels' instructions (comm/reduce.h); may be empty
  std::string version;
  int ranks = 1;
  size_t minBytes = 0;
  size_t maxBytes = 0;
  double stepFactor = 0;  // > 1: multiplicative steps
  size_t stepBytes = 0;   // used when stepFactor <= 1
  int warmupIters = 0;
  int iters = 0;
  int checkIters = 0;
  int average = 1;
  std::vector<RankInfo> rankInfo;
  std::vector<ResultRow> rows;

  // Mean bus bandwidth over every row's two halves, as nccl-tests.
  double averageBusBandwidth() const;
  long long wrongTotal() const;
};

// nccl-tests' table: preamble, header, one line per size, the footer.
void writeTable(std::ostream& out, const BenchReport& report);
// JSON in the layout of nccl-tests' -J output (docs/benchmark_metrics.md).
void writeJson(std::ostream& out, const BenchReport& report);
// One header line and one line per size, both halves as columns.
void writeCsv(std::ostream& out, const BenchReport& report);

// "1.5 us"-free formatting of a time the way nccl-tests prints it: two
// decimals below 100 us, one below 10^6, none above.
std::string formatTime(double us);

}  // namespace distrun::comm_bench
