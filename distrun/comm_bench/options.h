#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "distrun/comm/dtype.h"

namespace distrun::comm_bench {

// `distrun bench`'s settings, named after nccl-tests' flags
// (docs/commands.md#distrun-bench).
struct BenchOptions {
  std::string collective;      // all_reduce, ..., or pi
  size_t minBytes = 1024;      // -b
  size_t maxBytes = 32 << 20;  // -e
  size_t stepBytes = 1 << 20;  // -i, used when stepFactor <= 1
  double stepFactor = 2;       // -f
  int iters = 20;              // -n
  int warmupIters = 5;         // -w
  int checkIters = 1;          // -c
  int average = 1;             // -a: 0 rank 0, 1 mean, 2 min, 3 max
  int root = 0;                // -r
  std::vector<comm::DataType> types = {comm::DataType::kFloat32};  // -d
  std::vector<comm::ReduceOp> ops = {comm::ReduceOp::kSum};        // -o
  std::string format = "table";                                    // --format table|json|csv
  std::string backend = "auto";                                    // --backend
  // --device: cpu (host buffers) or cuda (buffers on this rank's GPU: the
  // nccl or rccl backend, or gloo staged through host memory).
  std::string device = "cpu";
  bool nprocGiven = false;   // --nproc-per-node was given (else, on cuda: one rank a GPU)
  int nprocPerNode = 2;      // ranks when launched bare
  int timeoutSeconds = 300;  // -T
  long long piIntervals = 100'000'000;  // --intervals
};

// "64", "4K", "1M", "2G" (binary multiples, as nccl-tests). Throws
// UsageError naming `what`.
size_t parseBytes(const std::string& text, const std::string& what);

// The sizes the sweep visits: minBytes, then times stepFactor (or plus
// stepBytes) while not above maxBytes.
std::vector<size_t> sweepSizes(const BenchOptions& options);

// Checks the options against each other; throws UsageError naming the flag.
void validate(const BenchOptions& options);

// The backend the sweep runs on: --backend as given, except that auto
// with --device cuda is nccl (PyTorch's default for CUDA tensors).
std::string benchBackend(const BenchOptions& options);

}  // namespace distrun::comm_bench
