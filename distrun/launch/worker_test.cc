#include "distrun/launch/worker.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/system.h"

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

// A process whose thread of the SCHED_IDLE class (as comm's IdleSpinner)
// outlives its main thread, which leaves (the exit system call, not
// exit_group) once `go` is written: the state of a SIGKILLed worker whose
// spinner is starved.
struct ChildWithAnIdleThread {
  pid_t pid = -1;
  pid_t idleThread = -1;  // -1: the kernel refused SCHED_IDLE
  int go = -1;
};

void* idleThreadMain(void* tidPipe) {
  const sched_param param{};
  pid_t tid = ::sched_setscheduler(0, SCHED_IDLE, &param) == 0 ? ::gettid() : -1;
  [[maybe_unused]] ssize_t n = ::write(*static_cast<int*>(tidPipe), &tid, sizeof(tid));
  while (true) ::pause();
}

ChildWithAnIdleThread startChildWithAnIdleThread() {
  int tid[2];
  int go[2];
  if (::pipe(tid) != 0 || ::pipe(go) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    pthread_t thread;
    if (::pthread_create(&thread, nullptr, idleThreadMain, &tid[1]) != 0) ::_exit(1);
    char c;
    [[maybe_unused]] ssize_t n = ::read(go[0], &c, 1);
    ::syscall(SYS_exit, 0);  // this thread only, without unwinding into GoogleTest
  }
  ChildWithAnIdleThread child{pid, -1, go[1]};
  if (::read(tid[0], &child.idleThread, sizeof(child.idleThread)) != sizeof(child.idleThread)) {
    child.idleThread = -1;
  }
  ::close(tid[0]);
  ::close(tid[1]);
  ::close(go[0]);
  return child;
}

// Whether the kernel lets this user move a thread out of SCHED_IDLE.
bool mayLeaveTheIdleClass() {
  rlimit nice{};
  return ::geteuid() == 0 || (::getrlimit(RLIMIT_NICE, &nice) == 0 && nice.rlim_cur >= 20);
}

// Why the test cannot run here; nullptr when it can.
const char* whyItCannotRun(const ChildWithAnIdleThread& child) {
  if (child.idleThread < 0) return "the kernel refuses SCHED_IDLE here";
  if (!mayLeaveTheIdleClass()) {
    return "leaving SCHED_IDLE needs root, CAP_SYS_NICE or RLIMIT_NICE 20 (ulimit -e)";
  }
  return nullptr;
}

bool becomesZombie(pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    const std::optional<ProcessStatus> status = readProcessStatus(pid);
    if (status && status->state == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(WorkerTest, AnExitingWorkersIdleThreadsGetTheNormalClassARunningOnesKeepTheirs) {
  ChildWithAnIdleThread child = startChildWithAnIdleThread();
  ASSERT_GT(child.pid, 0);
  if (const char* skip = whyItCannotRun(child)) {
    ::kill(child.pid, SIGKILL);
    waitFor(child.pid);
    GTEST_SKIP() << skip;
  }
  EXPECT_EQ(hurryExit(child.pid), 0) << "running: left alone";
  EXPECT_EQ(::sched_getscheduler(child.idleThread), SCHED_IDLE);

  ASSERT_EQ(::write(child.go, "x", 1), 1);  // its main thread leaves
  ASSERT_TRUE(becomesZombie(child.pid));
  EXPECT_EQ(hurryExit(child.pid), 1);
  EXPECT_EQ(::sched_getscheduler(child.idleThread), SCHED_OTHER);

  ::kill(child.pid, SIGKILL);
  EXPECT_EQ(waitFor(child.pid), 128 + SIGKILL);
  ::close(child.go);
  EXPECT_EQ(hurryExit(child.pid), 0) << "reaped: nothing to do";
}

}  // namespace
}  // namespace distrun::launch
