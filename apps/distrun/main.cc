// The `distrun` command: a thin shell over distrun::cli::runCli.

#include <iostream>
#include <string>
#include <vector>

#include "distrun/cli/cli.h"
#include "distrun/common/environment.h"
#include "distrun/common/system.h"

int main(int argc, char** argv) {
  distrun::ProcessEnvironment env;
  const std::string executable = distrun::executablePath(argv[0]);
  distrun::cli::CliContext ctx{
      .env = env,
      .out = std::cout,
      .err = std::cerr,
      .hostFacts = distrun::readHostFacts,
      .builtinSiteDir = distrun::cli::builtinSiteDirFor(executable),
      .exec = distrun::cli::execProgram,
      .toolDir = executable.substr(0, executable.rfind('/')),
  };
  std::vector<std::string> args(argv + 1, argv + argc);
  // Through a link named torchrun, distrun is `distrun run` with torchrun's
  // rule for PROGRAM: it drops into containers and scripts in torchrun's place.
  std::string name = argv[0];
  if (name.substr(name.rfind('/') + 1) == "torchrun") {
    args.insert(args.begin(), "run");
    ctx.asTorchrun = true;
  }
  return distrun::cli::runCli(args, ctx);
}
