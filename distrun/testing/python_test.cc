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
  expectGlooWorld(slurm("timeout 120 srun -N2 -n3 " + distrun() + " exec -- " +
                        glooCheck()),
                  3);
}

TEST(PythonMpiTest, GlooJobOfTwoRanksThroughMpirunAndExec) {
  std::string reason = pythonTorchUnavailableReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  if (runCommand("command -v mpirun").exitCode != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/install-deps)";
  }
  expectGlooWorld(
      runCommand("timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 " +
                 quote(binaryPath("distrun")) + " exec -- " + glooCheck()),
      2);
}

}  // namespace
}  // namespace distrun::testing
