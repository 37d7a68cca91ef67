// examples/python/preemptible_ddp.py under `distrun run` (label: python; it
// starts no Slurm): SIGUSR1 to the agent reaches both workers, they agree,
// rank 0 writes the checkpoint and the job exits 79; run again, it resumes
// from the checkpoint and finishes.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/testing/command.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;

bool haveTorch() { return runCommand("/usr/bin/python3 -c 'import torch'").exitCode == 0; }

// The first child of `pid` (the program `timeout` runs); 0 when none yet.
int childOf(int pid) {
  std::vector<std::string> children = lines(runCommand("pgrep -P " + std::to_string(pid)).out);
  return children.empty() ? 0 : std::stoi(children.front());
}

TEST(PreemptionPythonTest, UsrOneCheckpointsWithExit79AndTheRerunResumes) {
  if (!haveTorch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
  const std::string dir = ::testing::TempDir() + "preemptible_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string checkpoint = dir + "/ddp.ckpt";
  const std::string command = "timeout 300 " + quote(binaryPath("distrun")) +
                              " run --nproc-per-node 2 /usr/bin/python3 " +
                              quote(sourcePath("examples/python/preemptible_ddp.py")) +
                              " --steps 200 --step-seconds 0.05 --checkpoint " + quote(checkpoint);
  const std::string log = dir + "/log";
  const int timeout = startCommand(command, log);
  // Both handlers are in place once rank 0 trains (it passed init_process_group).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (runCommand("grep -q 'preemptible_ddp: training' " + quote(log)).exitCode != 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << runCommand("cat " + quote(log)).out;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int agent = childOf(timeout);
  ASSERT_NE(agent, 0);
  ASSERT_EQ(::kill(agent, SIGUSR1), 0);
  EXPECT_EQ(waitCommand(timeout), 79) << runCommand("cat " + quote(log)).out;
  const std::string first = runCommand("cat " + quote(log)).out;
  EXPECT_THAT(first, HasSubstr("preemptible_ddp: SIGUSR1: wrote " + checkpoint));
  EXPECT_THAT(first, HasSubstr("distrun: node 0: job checkpointed on SIGUSR1: the workers exited "
                               "79"));
  EXPECT_THAT(first, ::testing::Not(HasSubstr("failed"))) << first;
  ASSERT_TRUE(std::filesystem::exists(checkpoint));

  CommandResult rerun = runCommand(command);
  EXPECT_EQ(rerun.exitCode, 0) << rerun.err;
  EXPECT_THAT(rerun.out, HasSubstr("preemptible_ddp: resumed from " + checkpoint + " at step "));
  EXPECT_THAT(rerun.out, HasSubstr("preemptible_ddp: finished 200 steps"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace distrun::testing
