#include "distrun/launch/worker.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace distrun::launch {
namespace {

std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 30000);
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int waitFor(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(WorkerTest, RunsWithEnvironmentOwnGroupAndAffinity) {
  WorkerSpec spec{{"sh", "-c",
                   "echo $GREETING; echo err >&2; ps -o pgid= -p $$; "
                   "grep Cpus_allowed_list /proc/self/status; exit 3"},
                  {"GREETING=hi", "PATH=/usr/bin:/bin"},
                  {0}};
  WorkerProcess w = spawnWorker(spec);
  std::string out = readAll(w.stdoutFd.get());
  std::string err = readAll(w.stderrFd.get());
  EXPECT_EQ(waitFor(w.pid), 3);
  EXPECT_THAT(out, ::testing::StartsWith("hi\n"));
  EXPECT_THAT(out, ::testing::HasSubstr(std::to_string(w.pid) + "\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("Cpus_allowed_list:\t0\n"));
  EXPECT_EQ(err, "err\n");
}

TEST(WorkerTest, MissingProgramExits127WithAMessage) {
  WorkerProcess w = spawnWorker({{"/nonexistent/prog"}, {}, {}});
  std::string err = readAll(w.stderrFd.get());
  EXPECT_EQ(waitFor(w.pid), 127);
  EXPECT_EQ(err,
            "distrun: error: cannot run '/nonexistent/prog': No such file or "
            "directory\n");
}

TEST(WorkerTest, SignalReachesTheWholeGroup) {
  // The worker starts a grandchild in its group; killpg must end both.
  WorkerProcess w =
      spawnWorker({{"sh", "-c", "sleep 60 & echo started; wait"}, {"PATH=/usr/bin:/bin"}, {}});
  char c;
  pollfd p{w.stdoutFd.get(), POLLIN, 0};
  ::poll(&p, 1, 30000);
  ASSERT_EQ(::read(w.stdoutFd.get(), &c, 1), 1);
  signalWorker(w.pid, SIGTERM);
  EXPECT_EQ(waitFor(w.pid), 128 + SIGTERM);
  // The pipe closes: sleep is gone too.
  EXPECT_EQ(readAll(w.stdoutFd.get()), "tarted\n");
}

}  // namespace
}  // namespace distrun::launch
