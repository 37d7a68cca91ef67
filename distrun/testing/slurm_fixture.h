#pragma once

#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/command.h"
#include "distrun/testing/local_slurm_cluster.h"

namespace distrun::testing {

// A test suite that shares one local Slurm cluster of three nodes, skipped
// with the reason when no cluster can be started here.
class SlurmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skipReason_ = LocalSlurmCluster::unavailableReason();
    if (skipReason_.empty()) cluster_ = std::make_unique<LocalSlurmCluster>(3);
  }
  static void TearDownTestSuite() { cluster_.reset(); }
  void SetUp() override {
    if (!skipReason_.empty()) GTEST_SKIP() << skipReason_;
  }

  static CommandResult slurm(const std::string& command) {
    return runCommand(cluster_->env() + command);
  }
  static std::string distrun() { return quote(binaryPath("distrun")); }

  // Every task's `distrun env --format json`, keyed by RANK.
  static std::map<int, nlohmann::json> envPerRank(const std::string& srunFlags) {
    CommandResult r =
        slurm("timeout 60 srun " + srunFlags + " " + distrun() + " env --format json");
    EXPECT_EQ(r.exitCode, 0) << r.err;
    std::map<int, nlohmann::json> views;
    for (const std::string& line : lines(r.out)) {
      nlohmann::json view = nlohmann::json::parse(line);
      views[std::stoi(view["env"]["RANK"].get<std::string>())] = view;
    }
    return views;
  }

  static inline std::string skipReason_;
  static inline std::unique_ptr<LocalSlurmCluster> cluster_;
};

// Why /usr/bin/python3 cannot run the PyTorch checks, or empty.
std::string pythonTorchUnavailableReason();

}  // namespace distrun::testing
