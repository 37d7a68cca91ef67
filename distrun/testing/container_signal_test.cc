// Signals and exit statuses through distrun's own container runtime, with
// the real bubblewrap (which forwards no signal itself): a worker in a
// container reacts to the agent's signals and ends as the program ended.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/system.h"
#include "distrun/common/unique_fd.h"
#include "distrun/launch/worker.h"
#include "distrun/testing/container_runtime_fixture.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;

// Says "ready" once its handler is in place, exits 3 on SIGUSR1 (as a
// program joining the preemption protocol exits 79 after its snapshot).
const std::vector<std::string> kHandlesUsr1 = {
    "/bin/sh", "-c", "trap 'exit 3' USR1; echo ready; while :; do sleep 1 & wait $!; done"};
const std::vector<std::string> kSleeps = {"/bin/sh", "-c", "echo ready; exec sleep 60"};

using SignalTest = ContainerRuntimeTest;

TEST_F(SignalTest, SigusrOneToTheWorkersGroupReachesTheProgramWhichExitsItsWay) {
  auto session = open();
  Worker worker(session->command(kHandlesUsr1, workDir_));
  ASSERT_EQ(worker.readLine(), "ready");
  launch::signalWorker(worker.pid(), SIGUSR1);  // as the agent forwards it
  WorkerRun run = worker.finish();
  ASSERT_TRUE(WIFEXITED(run.status)) << run.status << run.err;
  EXPECT_EQ(WEXITSTATUS(run.status), 3);
}

TEST_F(SignalTest, AProgramKilledBySigtermEndsTheWorkerBySigterm) {
  auto session = open();
  Worker worker(session->command(kSleeps, workDir_));
  ASSERT_EQ(worker.readLine(), "ready");
  launch::signalWorker(worker.pid(), SIGTERM);
  WorkerRun run = worker.finish();
  ASSERT_TRUE(WIFSIGNALED(run.status)) << run.status << run.err;
  EXPECT_EQ(WTERMSIG(run.status), SIGTERM);
}

TEST_F(SignalTest, AnExitCodeAbove128StaysAnExitCode) {
  auto session = open();
  WorkerRun run = runWorker(session->command({"/bin/sh", "-c", "exit 143"}, workDir_));
  ASSERT_TRUE(WIFEXITED(run.status)) << run.status;
  EXPECT_EQ(WEXITSTATUS(run.status), 143);
}

TEST_F(SignalTest, SigkillOfTheWorkerLeavesNoProcessOfItBehind) {
  auto session = open();
  Worker worker(session->command({"/bin/sh", "-c", "echo $$; exec sleep 60"}, workDir_));
  pid_t program = std::stoi(worker.readLine());
  pid_t start = static_cast<pid_t>(readProcessStatus(program)->parentPid);
  pid_t bwrap = static_cast<pid_t>(readProcessStatus(start)->parentPid);
  EXPECT_EQ(readProcessStatus(bwrap)->parentPid, worker.pid());
  ::kill(worker.pid(), SIGKILL);  // the worker alone, not its group
  WorkerRun run = worker.finish();
  EXPECT_TRUE(WIFSIGNALED(run.status));
  EXPECT_TRUE(waitUntilGone(bwrap));
  EXPECT_TRUE(waitUntilGone(start));
  EXPECT_TRUE(waitUntilGone(program));
}

// distrun exec --container in a child process whose output comes back
// through a pipe; returns its pid.
pid_t runInContainerChild(const container::ContainerSession& session,
                          const std::vector<std::string>& program, const std::string& dir,
                          UniqueFd& output) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  UniqueFd readEnd(fds[0]), writeEnd(fds[1]);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(writeEnd.get(), STDOUT_FILENO);
    int code = 70;
    try {
      code = container::runInContainer(session, program, dir);
    } catch (...) {
    }
    ::_exit(code);
  }
  output = std::move(readEnd);
  return pid;
}

std::string readLineFrom(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
  return line;
}

int exitCodeOf(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
}

TEST_F(SignalTest, RunInContainerForwardsSignalsSentToItAlone) {
  auto session = open();
  UniqueFd output;
  pid_t exec = runInContainerChild(*session, kHandlesUsr1, workDir_, output);
  ASSERT_EQ(readLineFrom(output.get()), "ready");
  ::kill(exec, SIGUSR1);
  EXPECT_EQ(exitCodeOf(exec), 3);
}

TEST_F(SignalTest, RunInContainerReturnsASignalAsAShellDoes) {
  auto session = open();
  UniqueFd output;
  pid_t exec = runInContainerChild(*session, kSleeps, workDir_, output);
  ASSERT_EQ(readLineFrom(output.get()), "ready");
  ::kill(exec, SIGTERM);
  EXPECT_EQ(exitCodeOf(exec), 128 + SIGTERM);
}

// The per-worker cost of entering the container, for the report (not an
// assertion): 8 trivial workers started at once and waited for, without
// and with the container (each way of mounting).
TEST_F(SignalTest, EnteringCostIsMeasured) {
  auto timeEight = [](const std::vector<std::string>& argv) {
    auto begin = std::chrono::steady_clock::now();
    std::vector<std::unique_ptr<Worker>> workers;
    for (int i = 0; i < 8; ++i) workers.push_back(std::make_unique<Worker>(argv));
    for (auto& worker : workers) EXPECT_EQ(worker->finish().status, 0);
    std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - begin;
    return took.count();
  };
  double bare = timeEight({"/bin/true"});
  for (const char* method : {"loop", "squashfuse", "unpack"}) {
    if (!cannotUse(method).empty()) continue;
    auto session = open(method);
    timeEight(session->command({"/bin/true"}, workDir_));  // warm the page cache
    double contained = timeEight(session->command({"/bin/true"}, workDir_));
    std::printf("8 workers: %.1f ms bare, %.1f ms in the container (%s): %.2f ms more each\n", bare,
                contained, method, (contained - bare) / 8);
    RecordProperty(std::string("per_worker_ms_") + method, std::to_string((contained - bare) / 8));
  }
}

}  // namespace
}  // namespace distrun::testing
