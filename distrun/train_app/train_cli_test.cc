// distrun-train refuses a bad flag in the flag's words, exit 64, before it
// builds a workload or joins other ranks.
#include "distrun/train_app/train_cli.h"

#include <sstream>

#include <gtest/gtest.h>

namespace distrun::train {
namespace {

struct TrainCliRun {
  int operator()(const std::vector<std::string>& args) {
    TrainCliContext ctx{.env = env, .out = out, .err = err};
    return runTrainCli(args, ctx);
  }
  MapEnvironment env;
  std::ostringstream out, err;
};

TEST(TrainCliTest, BadFlagsAreNamedAsTyped) {
  TrainCliRun batch;
  EXPECT_EQ(batch({"linear", "--batch-size", "0"}), 64);
  EXPECT_EQ(batch.err.str(), "distrun: error: --batch-size 0: expected at least 1\n");
  TrainCliRun epochs;
  EXPECT_EQ(epochs({"linear", "--epochs", "0"}), 64);
  EXPECT_EQ(epochs.err.str(), "distrun: error: --epochs 0: expected at least 1\n");
  TrainCliRun bucket;
  EXPECT_EQ(bucket({"linear", "--bucket-cap-mb", "-1"}), 64);
  EXPECT_EQ(bucket.err.str(), "distrun: error: --bucket-cap-mb -1: expected more than 0\n");
  EXPECT_EQ(bucket.out.str(), "");
}

TEST(TrainCliTest, MnistNotFoundSaysToPassData) {
  TrainCliRun run;
  EXPECT_EQ(run({"mnist", "--data", "/nonexistent/mnist", "--progress", "none"}), 74);
  EXPECT_EQ(run.err.str(),
            "distrun: error: MNIST folder '/nonexistent/mnist' does not "
            "exist: run scripts/prepare-mnist, or give the folder of a "
            "torchvision MNIST download with --data DIR\n");
}

}  // namespace
}  // namespace distrun::train
