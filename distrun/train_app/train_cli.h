#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "distrun/common/environment.h"

namespace distrun::train {

struct TrainCliContext {
  const Environment& env;
  std::ostream& out;
  std::ostream& err;
};

// `distrun-train WORKLOAD [flags]` (docs/training.md): one rank of a
// data-parallel run. Joins the ranks named by the torchrun variables
// (RANK, WORLD_SIZE, MASTER_ADDR/PORT or distrun's store), as set by
// `distrun train`, `distrun run`, `distrun exec` or torchrun --no-python;
// with none of them it trains alone. Returns the exit status: 0, or an
// error's code after one line on `err`.
int runTrainCli(const std::vector<std::string>& args, TrainCliContext& ctx);

}  // namespace distrun::train
