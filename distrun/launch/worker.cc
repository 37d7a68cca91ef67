#include "distrun/launch/worker.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distrun/common/error.h"
#include "distrun/common/process.h"
#include "distrun/common/system.h"

namespace distrun::launch {

namespace {

// The entries of a /proc folder named by a number (pids in /proc, thread
// ids in /proc/PID/task); none when it cannot be read (a process reaped
// meanwhile).
std::vector<pid_t> numberedEntries(const std::string& folder) {
  std::vector<pid_t> ids;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return ids;
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long id = std::strtol(entry->d_name, &end, 10);
    if (*end == '\0' && id > 0) ids.push_back(static_cast<pid_t>(id));
  }
  ::closedir(dir);
  return ids;
}

void setNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// The worker's output pipes and its progress pipe, whose write end is
// non-blocking: a worker never waits on its agent to report.
struct WorkerPipes {
  Pipe out = makePipe("worker output");
  Pipe err = makePipe("worker output");
  Pipe progress = makePipe("worker progress");
};

}  // namespace

WorkerProcess spawnWorker(const WorkerSpec& spec) {
  WorkerPipes pipes;
  setNonBlocking(pipes.progress.write.get());
  // The agent blocks the signals it reads through its signalfd: the worker
  // gets none blocked. An agent that is gone before the worker got that far
  // makes it exit 137.
  const pid_t pid =
      startProcess({.argv = spec.argv,
                    .environment = spec.environment,
                    .descriptors = {{.target = STDOUT_FILENO, .source = pipes.out.write.get()},
                                    {.target = STDERR_FILENO, .source = pipes.err.write.get()},
                                    {.target = kProgressFd, .source = pipes.progress.write.get()}},
                    .ownProcessGroup = true,
                    .parentDeathSignal = SIGKILL,
                    .emptySignalMask = true,
                    .cpus = spec.cpus,
                    .explainExecFailure = true});
  for (Pipe* p : {&pipes.out, &pipes.err, &pipes.progress}) {
    p->write.reset();  // the child holds them now
    setNonBlocking(p->read.get());
  }
  return WorkerProcess{pid, std::move(pipes.out.read), std::move(pipes.err.read),
                       std::move(pipes.progress.read)};
}

void signalWorker(pid_t pid, int signal) {
  if (pid > 0) ::killpg(pid, signal);
}

int hurryExit(pid_t pid) {
  const std::optional<ProcessStatus> leader = readProcessStatus(pid);
  if (!leader || leader->state != 'Z') return 0;
  int hurried = 0;
  const sched_param normal{};
  for (pid_t tid : numberedEntries("/proc/" + std::to_string(pid) + "/task")) {
    if (::sched_getscheduler(tid) == SCHED_IDLE &&
        ::sched_setscheduler(tid, SCHED_OTHER, &normal) == 0) {
      ++hurried;
    }
  }
  return hurried;
}

void becomeSubreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    throw SystemError("prctl", "PR_SET_CHILD_SUBREAPER", errno);
  }
}

namespace {

// The pids whose parent is this process: each of its threads' children
// file (/proc/self/task/TID/children), else, where the kernel has none, every
// process's parent from /proc (a walk of every process: about 1 ms at
// each job's end here).
std::vector<pid_t> childrenOfSelf() {
  const pid_t self = ::getpid();
  std::vector<pid_t> children;
  const std::string tasks = "/proc/" + std::to_string(self) + "/task";
  bool listed = false;
  for (pid_t tid : numberedEntries(tasks)) {
    std::optional<std::string> list =
        readFileIfPresent(tasks + "/" + std::to_string(tid) + "/children");
    if (!list) continue;
    listed = true;
    for (size_t at = 0; (at = list->find_first_of("0123456789", at)) != std::string::npos;) {
      size_t end = list->find(' ', at);
      children.push_back(static_cast<pid_t>(std::stol(list->substr(at, end - at))));
      at = end;
    }
  }
  if (listed) return children;
  for (pid_t pid : numberedEntries("/proc")) {
    const std::optional<ProcessStatus> status = readProcessStatus(pid);
    if (status && status->parentPid == self) children.push_back(pid);
  }
  return children;
}

}  // namespace

int killAdoptedOrphans() {
  std::vector<pid_t> orphans = childrenOfSelf();
  for (pid_t pid : orphans) ::kill(pid, SIGKILL);
  // Reap them: when the agent returns, they are gone, not merely signalled.
  for (pid_t pid : orphans) ::waitpid(pid, nullptr, 0);
  return static_cast<int>(orphans.size());
}

}  // namespace distrun::launch
