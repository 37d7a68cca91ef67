// The interleaved efficiency bench (bench/ddp-efficiency.sh): distrun's
// program and PyTorch's peer measure every phase of every cycle and write
// the same report; their errors name the input (label: python, for the
// peer; both read the repository's data/, which scripts/prepare-mnist builds).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "distrun/testing/command.h"
#include "distrun/testing/slurm_fixture.h"

namespace distrun::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string dataDir() { return sourcePath("data"); }

std::string skipReason() {
  if (!std::filesystem::exists(dataDir() + "/MNIST/raw/train-images-idx3-ubyte")) {
    return "no MNIST under " + dataDir() + ": run scripts/prepare-mnist";
  }
  return "";
}

std::string metricsPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + std::to_string(::getpid()) + ".json";
}

// Tiny cycles: every phase still runs its steps on the ranks it names.
const std::string kSmall = " --cycles 4 --steps 2 --warmup 1 --limit-train 256 --data ";

bool positive(const json& v) {
  return v.is_number() && v.get<double>() > 0 && std::isfinite(v.get<double>());
}

// Every cycle has samples/s for the pair, lockstep and independent ranks and each
// rank alone (a phase that did not run would divide by zero).
void expectEveryPhaseMeasured(const std::string& path, const std::string& runtime) {
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const json m = json::parse(in);
  EXPECT_EQ(m["runtime"], runtime);
  EXPECT_EQ(m["world_size"], 2);
  EXPECT_EQ(m["batch_size"], 64);
  EXPECT_EQ(m["steps_per_phase"], 2);
  ASSERT_EQ(m["cycles"].size(), 4u);
  for (const json& c : m["cycles"]) {
    EXPECT_TRUE(positive(c["pair"])) << c;
    EXPECT_TRUE(positive(c["lockstep"])) << c;
    EXPECT_TRUE(positive(c["independent"])) << c;
    ASSERT_EQ(c["lone"].size(), 2u) << c;
    EXPECT_TRUE(positive(c["lone"][0]) && positive(c["lone"][1])) << c;
  }
}

TEST(EfficiencyBenchTest, DistrunMeasuresEveryPhaseAndThePairsWaits) {
  if (std::string reason = skipReason(); !reason.empty()) GTEST_SKIP() << reason;
  const std::string metrics = metricsPath("distrun-efficiency");
  const std::string bench = quote(binaryPath("ddp_efficiency_bench"));
  CommandResult r =
      runCommand("timeout 300 " + quote(binaryPath("distrun")) + " run --nproc-per-node 2 " +
                 bench + kSmall + quote(dataDir()) + " --metrics " + quote(metrics));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[0:0] cycle 4/4  pair "));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("[0:1] cycle")));
  expectEveryPhaseMeasured(metrics, "distrun");
  for (const json& c : json::parse(std::ifstream(metrics))["cycles"]) {
    ASSERT_EQ(c["pair_wait_share"].size(), 2u);
    for (const json& w : c["pair_wait_share"]) {
      EXPECT_GE(w.get<double>(), 0);
      EXPECT_LE(w.get<double>(), 1);
    }
  }
}

TEST(EfficiencyBenchTest, DistrunErrorsNameTheInputAndExitWithTheirCode) {
  if (std::string reason = skipReason(); !reason.empty()) GTEST_SKIP() << reason;
  const std::string bench = quote(binaryPath("ddp_efficiency_bench"));
  CommandResult r = runCommand(bench + " --cycles 0");
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_THAT(r.err, HasSubstr("distrun: error: --cycles: "));
  r = runCommand(bench + " --limit-train 10 --data " + quote(dataDir()));
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_EQ(r.err, "distrun: error: --limit-train 10: expected at least 64 samples\n");
  r = runCommand(bench + " --data /nonexistent");
  EXPECT_EQ(r.exitCode, 74) << r.err;
  EXPECT_THAT(r.err, HasSubstr("run scripts/prepare-mnist, or give the folder of a torchvision "
                               "MNIST download with --data DIR\n"));
}

std::string pythonPeer() {
  return "/usr/bin/python3 " + quote(sourcePath("bench/peers/torch_ddp_efficiency.py"));
}

TEST(EfficiencyBenchTest, PytorchPeerWritesTheSameReport) {
  if (std::string reason = skipReason() + pythonTorchUnavailableReason(); !reason.empty()) {
    GTEST_SKIP() << reason;
  }
  const std::string metrics = metricsPath("pytorch-efficiency");
  CommandResult r =
      runCommand("timeout 300 " + quote(binaryPath("distrun")) + " run --nproc-per-node 2 " +
                 pythonPeer() + kSmall + quote(dataDir()) + " --metrics " + quote(metrics));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[0:0] cycle 4/4  pair "));
  expectEveryPhaseMeasured(metrics, "pytorch");
}

TEST(EfficiencyBenchTest, PytorchPeerErrorsNameTheInput) {
  if (std::string reason = pythonTorchUnavailableReason(); !reason.empty()) GTEST_SKIP() << reason;
  CommandResult r = runCommand(pythonPeer() + " --cycles 0");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.err, "torch_ddp_efficiency: error: --cycles must be >= 1, got 0\n");
  r = runCommand(pythonPeer() + " --limit-train 10");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.err, "torch_ddp_efficiency: error: --limit-train must be >= 64, got 10\n");
  r = runCommand(pythonPeer() + " --data /nonexistent");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.err, HasSubstr("torch_ddp_efficiency: error: no MNIST data: "));
}

}  // namespace
}  // namespace distrun::testing
