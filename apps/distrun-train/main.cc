// `distrun-train`: one rank of a data-parallel training run, the LibTorch
// worker that `distrun train` launches (the launcher itself links no
// LibTorch).
#include <iostream>
#include <string>
#include <vector>

#include "distrun/common/environment.h"
#include "distrun/train_app/train_cli.h"

int main(int argc, char** argv) {
  distrun::ProcessEnvironment env;
  distrun::train::TrainCliContext ctx{.env = env, .out = std::cout, .err = std::cerr};
  return distrun::train::runTrainCli(std::vector<std::string>(argv + 1, argv + argc), ctx);
}
