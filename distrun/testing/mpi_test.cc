// Open MPI's mpirun as the scheduler (label: mpi).
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/command.h"

namespace distrun::testing {
namespace {

using nlohmann::json;

TEST(MpiTest, MpirunThreeRanksEveryTaskSeesTheWorld) {
  if (runCommand("command -v mpirun").exitCode != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/install-deps)";
  }
  CommandResult r = runCommand(
      "timeout 60 mpirun --allow-run-as-root --oversubscribe -np 3 " +
      quote(binaryPath("distrun")) + " env --format json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), 3u) << r.out;
  std::set<std::string> ranks, ports;
  for (const std::string& line : out) {
    json view = json::parse(line);
    const json& env = view["env"];
    EXPECT_EQ(view["scheduler"], "openmpi");
    EXPECT_EQ(env["WORLD_SIZE"], "3");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "3");
    EXPECT_EQ(env["LOCAL_RANK"], env["RANK"]);
    EXPECT_EQ(env["GROUP_WORLD_SIZE"], "1");
    EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
    ranks.insert(env["RANK"].get<std::string>());
    ports.insert(env["MASTER_PORT"].get<std::string>());
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2"}));
  EXPECT_EQ(ports.size(), 1u) << "every rank must derive the same port";
}

}  // namespace
}  // namespace distrun::testing
