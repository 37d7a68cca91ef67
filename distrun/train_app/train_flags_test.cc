// distrun-train's flags are checked in the flags' words (`--batch-size`),
// before the library would refuse the option they set in its own words
// (`TrainerOptions::batchSize`: trainer_test.cc, ddp_test.cc).
#include "distrun/train_app/train_flags.h"

#include <algorithm>

#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include "distrun/common/error.h"

namespace distrun::train {
namespace {

// "accepted", or the UsageError's message for `linear ARGS...`.
std::string verdictOn(const std::vector<std::string>& args) {
  CLI::App app;
  TrainFlags flags;
  addTrainFlags(app, flags);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  reversed.push_back("linear");
  app.parse(reversed);
  EXPECT_EQ(flags.workload, "linear");
  try {
    checkTrainFlags(flags);
    return "accepted";
  } catch (const UsageError& e) {
    return e.what();
  }
}

TEST(TrainFlagsTest, DefaultsAndGoodValuesAreAccepted) {
  EXPECT_EQ(verdictOn({}), "accepted");
  EXPECT_EQ(verdictOn({"--epochs", "1", "--batch-size", "1", "--save-every", "0",
                       "--save-every-steps", "0", "--threads-per-rank", "0", "--bucket-cap-mb",
                       "0.5", "--progress", "none", "--deterministic"}),
            "accepted");
}

TEST(TrainFlagsTest, CountsOutOfRangeNameTheFlag) {
  EXPECT_EQ(verdictOn({"--epochs", "0"}), "--epochs 0: expected at least 1");
  EXPECT_EQ(verdictOn({"--batch-size", "-3"}), "--batch-size -3: expected at least 1");
  EXPECT_EQ(verdictOn({"--save-every", "-1"}), "--save-every -1: expected 0 (never) or more");
  EXPECT_EQ(verdictOn({"--save-every-steps", "-2"}),
            "--save-every-steps -2: expected 0 (never) or more");
  EXPECT_EQ(verdictOn({"--threads-per-rank", "-1"}),
            "--threads-per-rank -1: expected 1 or more (or 0: one per CPU the "
            "rank may use)");
  EXPECT_EQ(verdictOn({"--bucket-cap-mb", "0"}), "--bucket-cap-mb 0: expected more than 0");
}

TEST(TrainFlagsTest, ChoicesNameTheFlag) {
  EXPECT_EQ(verdictOn({"--progress", "fancy"}),
            "--progress 'fancy': expected auto, bar, epochs or none");
  EXPECT_EQ(verdictOn({"--balance-load", "--deterministic"}),
            "--balance-load with --deterministic: the split of each step "
            "follows the ranks' timing, so runs cannot repeat bit for bit; "
            "choose one");
}

}  // namespace
}  // namespace distrun::train
