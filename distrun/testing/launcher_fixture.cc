#include "distrun/testing/launcher_fixture.h"

#include <unistd.h>

#include <filesystem>
#include <vector>

#include "distrun/common/system.h"
#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/socket.h"
#include "distrun/testing/command.h"

namespace distrun::testing {

void LauncherFixture::SetUp() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name =
      std::string(test->test_suite_name()) + "_" + std::to_string(::getpid()) + "_" + test->name();
  for (char& c : name) c = c == '/' ? '_' : c;
  dir_ = ::testing::TempDir() + name;
  std::filesystem::create_directories(dir_);
}

void LauncherFixture::TearDown() { std::filesystem::remove_all(dir_); }

std::string LauncherFixture::distrun() const { return quote(binaryPath("distrun")); }

std::string LauncherFixture::worker(const std::string& body, const std::string& traps) const {
  const std::string setTraps = traps.empty() ? "" : traps + "; ";
  return "sh -c " + quote(setTraps + "echo $$ >> " + path("pids") + "; " + body);
}

std::string LauncherFixture::log(const std::string& name) const {
  return readTextFile(path(name), "the test's log");
}

void LauncherFixture::expectAllGone(const std::string& pidFile) const {
  std::vector<int> pids = readInts(path(pidFile));
  ASSERT_FALSE(pids.empty()) << "no pid in " << pidFile;
  for (int pid : pids) EXPECT_FALSE(processAlive(pid)) << "pid " << pid << " survived";
}

int LauncherFixture::freePort() {
  int port = 0;
  UniqueFd listener(rdzv::listenTcp("127.0.0.1", 0, &port));
  return port;
}

std::string LauncherFixture::twoNodeFlags(int node, int port) {
  return "--nnodes 2 --node-rank " + std::to_string(node) +
         " --rdzv-endpoint 127.0.0.1:" + std::to_string(port) +
         " --local-addr 127.0.0.1 --join-timeout 60 ";
}

}  // namespace distrun::testing
