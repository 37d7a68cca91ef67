#pragma once

#include <string>

#include <gtest/gtest.h>

namespace distrun::testing {

// What the tests that run `distrun run` as a user would share: a scratch
// folder of the test's own, workers that record their pids there, a free
// port and the flags of two agents as two nodes of this machine.
class LauncherFixture : public ::testing::Test {
 protected:
  // The folder: TempDir()/<suite>_<pid>_<test>, made before, removed after.
  void SetUp() override;
  void TearDown() override;

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // The build's distrun, quoted for a shell.
  std::string distrun() const;
  // A worker command (sh): sets `traps`, records its pid in `pids`, then
  // runs `body`. A test that signals the workers once their pids are
  // recorded so finds their traps set.
  std::string worker(const std::string& body, const std::string& traps = "") const;
  // The text of `name` in the folder.
  std::string log(const std::string& name) const;
  // Every pid recorded in `pidFile` has ended.
  void expectAllGone(const std::string& pidFile = "pids") const;
  // A TCP port that was free a moment ago.
  static int freePort();
  // The flags of node `node` of two, meeting at 127.0.0.1:`port`.
  static std::string twoNodeFlags(int node, int port);

  std::string dir_;
};

}  // namespace distrun::testing
