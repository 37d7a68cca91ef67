// Debian's PyTorch launched by distrun (label: python).
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/command.h"
#include "distrun/testing/slurm_fixture.h"

namespace distrun::testing {
namespace {

using nlohmann::json;

// Parses one JSON line per rank from gloo_check.py and checks the world.
void expectGlooWorld(const CommandResult& r, int world) {
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), static_cast<size_t>(world)) << r.out;
  std::set<int> ranks;
  for (const std::string& line : out) {
    json result = json::parse(line);
    EXPECT_EQ(result["world"], world);
    EXPECT_EQ(result["sum"], world * (world - 1) / 2.0);
    ranks.insert(result["rank"].get<int>());
  }
  EXPECT_EQ(ranks.size(), static_cast<size_t>(world));
}

std::string glooCheck() {
  return "/usr/bin/python3 " + quote(sourcePath("examples/python/gloo_check.py"));
}

class PythonSlurmTest : public SlurmTest {
 protected:
  void SetUp() override {
    SlurmTest::SetUp();
    std::string reason = pythonTorchUnavailableReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

TEST_F(PythonSlurmTest, GlooJobOfThreeRanksThroughSrunAndExec) {
  expectGlooWorld(slurm("timeout 120 srun -N2 -n3 " + distrun() + " exec -- " + glooCheck()), 3);
}

TEST(PythonMpiTest, GlooJobOfTwoRanksThroughMpirunAndExec) {
  std::string reason = pythonTorchUnavailableReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  if (runCommand("command -v mpirun").exitCode != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/install-deps)";
  }
  expectGlooWorld(runCommand("timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 " +
                             quote(binaryPath("distrun")) + " exec -- " + glooCheck()),
                  2);
}

std::string ddpCheck() { return quote(sourcePath("examples/python/ddp_check.py")); }

// Every rank of a ddp_check.py job reported the same parameters and a
// complete environment contract.
void expectDdpWorld(const CommandResult& r, int world) {
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::set<int> ranks;
  std::set<double> checksums;
  std::set<std::string> ports;
  for (const std::string& line : lines(r.out)) {
    size_t brace = line.find('{');
    ASSERT_NE(brace, std::string::npos) << line;
    json result = json::parse(line.substr(brace));
    EXPECT_EQ(result["world"], world);
    ranks.insert(result["rank"].get<int>());
    checksums.insert(result["checksum"].get<double>());
    const json& env = result["env"];
    EXPECT_EQ(env["WORLD_SIZE"], std::to_string(world));
    EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "0");
    ports.insert(env["MASTER_PORT"].get<std::string>());
  }
  EXPECT_EQ(ranks.size(), static_cast<size_t>(world)) << r.out;
  EXPECT_EQ(checksums.size(), 1u) << "ranks ended with different parameters";
  EXPECT_EQ(ports.size(), 1u);
}

class PythonRunTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    std::string reason = pythonTorchUnavailableReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

TEST_P(PythonRunTest, StandaloneDdpJob) {
  int nproc = GetParam();
  expectDdpWorld(runCommand("DISTRUN_PYTHON=/usr/bin/python3 timeout 300 " +
                            quote(binaryPath("distrun")) + " run --standalone " +
                            "--nproc-per-node " + std::to_string(nproc) + " " + ddpCheck()),
                 nproc);
}

INSTANTIATE_TEST_SUITE_P(Workers, PythonRunTest, ::testing::Values(1, 2, 3));

TEST(PythonTwoAgentsTest, TwoAgentsAsTwoNodes) {
  std::string reason = pythonTorchUnavailableReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  std::string flags =
      "--nnodes 2 --rdzv-endpoint 127.0.0.1:" + std::to_string(20000 + ::getpid() % 9000) +
      " --local-addr 127.0.0.1 --nproc-per-node 2 ";
  std::string agent =
      "DISTRUN_TOKEN=two-agents DISTRUN_PYTHON=/usr/bin/python3 "
      "timeout 300 " +
      quote(binaryPath("distrun")) + " run " + flags;
  CommandResult r =
      runCommand("(" + agent + "--node-rank 1 " + ddpCheck() + " & " + agent + "--node-rank 0 " +
                 ddpCheck() + "; a=$?; wait $!; b=$?; exit $((a | b)))");
  expectDdpWorld(r, 4);
  EXPECT_NE(r.out.find("[1:3] "), std::string::npos) << "node 1 ran ranks 2-3";
}

TEST_F(PythonSlurmTest, SrunOneAgentPerNodeTwoWorkersEach) {
  CommandResult r = slurm(
      "DISTRUN_PYTHON=/usr/bin/python3 timeout 300 srun -N2 "
      "--ntasks-per-node=1 " +
      distrun() + " run --nproc-per-node 2 " + ddpCheck());
  expectDdpWorld(r, 4);
  EXPECT_NE(r.out.find("[1:2] "), std::string::npos);
}

}  // namespace
}  // namespace distrun::testing
