// `distrun-doctor`: the checks of `distrun doctor`, a binary of its own so
// that the launcher (`distrun`) does not load Gloo. `distrun doctor` execs it.

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "distrun/cli/cli.h"
#include "distrun/common/environment.h"
#include "distrun/common/system.h"
#include "distrun/doctor/doctor_cli.h"

int main(int argc, char** argv) {
  const std::string executable = distrun::executablePath(argv[0]);
  distrun::ProcessEnvironment env;
  distrun::doctor::DoctorContext ctx{
      .env = env,
      .out = std::cout,
      .err = std::cerr,
      .hostFacts = distrun::readHostFacts,
      .executable = executable,
      .builtinSiteDir = distrun::cli::builtinSiteDirFor(executable),
      .toolDir = std::filesystem::path(executable).parent_path().string(),
      .exec = [](const std::vector<std::string>& args) { distrun::cli::execProgram(args, {}); },
  };
  const int status =
      distrun::doctor::runDoctorCli(std::vector<std::string>(argv + 1, argv + argc), ctx);
  // A check that outlived its time limit still runs on a detached thread:
  // leave without destructors that could race it.
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(status);
}
