#pragma once

// `distrun bench --device cuda`: this rank's communicators and GPU memory.
// No CUDA header here; built in full where distrun has its GPU parts
// (gpu_bench.cc), else every call is a UsageError saying so.

#include <memory>
#include <string>

#include "distrun/comm/connect.h"
#include "distrun/comm_bench/runner.h"
#include "distrun/common/environment.h"

namespace distrun::comm_bench {

class GpuBench {
 public:
  virtual ~GpuBench() = default;
  virtual BenchTarget target() = 0;
};

// `backend` nccl or rccl: that backend on this rank's GPU (the timings
// through it too, copied to the GPU and back). gloo: the gloo backend,
// staged through pinned host memory (docs/comm.md, "The staged path").
std::unique_ptr<GpuBench> connectGpuBench(const Environment& env, const std::string& backend,
                                          const comm::ConnectOptions& options);

// The GPUs this process sees through `backend`'s runtime (CUDA's, HIP's
// for rccl): a bare `--device cuda` run's ranks a node.
int visibleGpus(const Environment& env, const std::string& backend);

}  // namespace distrun::comm_bench
