// `distrun-bench`: the collective benchmark, a binary of its own so that the
// launcher (`distrun`) does not load Gloo or MPI. `distrun bench` execs it.

#include <iostream>
#include <string>
#include <vector>

#include "distrun/cli/cli.h"
#include "distrun/comm_bench/bench_cli.h"
#include "distrun/common/environment.h"
#include "distrun/common/system.h"

int main(int argc, char** argv) {
  const std::string executable = distrun::executablePath(argv[0]);
  distrun::ProcessEnvironment env;
  distrun::comm_bench::BenchContext ctx{
      .env = env,
      .out = std::cout,
      .err = std::cerr,
      .hostFacts = distrun::readHostFacts,
      .executable = executable,
      .builtinSiteDir = distrun::cli::builtinSiteDirFor(executable),
  };
  return distrun::comm_bench::runBenchCli(std::vector<std::string>(argv + 1, argv + argc), ctx);
}
