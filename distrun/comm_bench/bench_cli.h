#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "distrun/common/environment.h"
#include "distrun/common/system.h"

namespace distrun::comm_bench {

struct BenchContext {
  const Environment& env;
  std::ostream& out;
  std::ostream& err;
  std::function<HostFacts()> hostFacts = readHostFacts;
  // This binary, for relaunching itself on local ranks.
  std::string executable;
  std::string builtinSiteDir;
};

// `distrun bench COLLECTIVE|pi [flags]` (docs/commands.md). Where it runs
// decides what it does:
//  - a rank of a job (RANK and WORLD_SIZE set, as under `distrun run` or
//    `distrun exec`; or a task of a Slurm step, Open MPI, MPICH or PBS job
//    with more than one task): joins the job's ranks and measures; rank 0
//    prints.
//  - bare (no job around it): starts --nproc-per-node local ranks of itself
//    through the node agent of `distrun run`, and they measure.
// Returns the exit status: 0, 1 when any result was wrong, or an error's
// code (printed as one line).
int runBenchCli(const std::vector<std::string>& args, BenchContext& ctx);

}  // namespace distrun::comm_bench
