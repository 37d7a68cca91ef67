#include "distrun/launch/process_launcher.h"

#include <sys/wait.h>

#include <cerrno>

namespace distrun::launch {

WorkerProcess SystemProcessLauncher::start(const WorkerSpec& spec) { return spawnWorker(spec); }

void SystemProcessLauncher::signal(pid_t group, int signal) { signalWorker(group, signal); }

std::vector<ProcessLauncher::Exit> SystemProcessLauncher::reap() {
  std::vector<Exit> exits;
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;  // none left that exited (0), or no children (ECHILD)
    Exit e{pid};
    if (WIFEXITED(status)) e.exitCode = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
    exits.push_back(e);
  }
  return exits;
}

void SystemProcessLauncher::waitFor(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

void SystemProcessLauncher::hurryExit(pid_t pid) { distrun::launch::hurryExit(pid); }

ProcessLauncher& systemProcessLauncher() {
  static SystemProcessLauncher launcher;
  return launcher;
}

}  // namespace distrun::launch
