// `distrun-bench`: the collective benchmark, a binary of its own so that the
// launcher (`distrun`) does not load Gloo or MPI. `distrun bench` execs it.
#include <unistd.h>

#include <climits>
#include <iostream>
#include <string>
#include <vector>

#include "distrun/cli/cli.h"
#include "distrun/comm_bench/bench_cli.h"
#include "distrun/common/environment.h"

int main(int argc, char** argv) {
  char path[PATH_MAX] = {};
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  const std::string executable = n > 0 ? std::string(path, static_cast<size_t>(n)) : argv[0];
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
