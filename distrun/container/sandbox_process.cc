#include "distrun/container/sandbox_process.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

extern char** environ;

namespace distrun::container {

namespace {

// The process group forwarded signals go to; 0 while there is none.
volatile sig_atomic_t gChildGroup = 0;

void forwardToChild(int signal) {
  int saved = errno;
  if (gChildGroup > 0) ::killpg(gChildGroup, signal);
  errno = saved;
}

sigset_t forwardedSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : kForwardedSignals) sigaddset(&set, signal);
  return set;
}

std::system_error systemError(const std::string& what) {
  return std::system_error(errno, std::generic_category(), what);
}

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// In a child between fork and exec: async-signal-safe calls only.
[[noreturn]] void execOrExit(char* const* argv, char* const* envp) {
  ::execvpe(argv[0], argv, envp);
  int e = errno;
  const char* parts[] = {kErrorPrefix, "cannot run '", argv[0], "': ", std::strerror(e), "\n"};
  for (const char* p : parts) {
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, p, std::strlen(p));
  }
  ::_exit(e == ENOENT ? 127 : 126);
}

// Standard input when it is a terminal whose foreground is this process's
// group (an interactive `distrun enter`); else -1.
int foregroundTerminal() {
  if (::isatty(STDIN_FILENO) == 0) return -1;
  return ::tcgetpgrp(STDIN_FILENO) == ::getpgrp() ? STDIN_FILENO : -1;
}

// tcsetpgrp from outside the foreground group raises SIGTTOU unless it is
// blocked. Async-signal-safe.
void giveTerminal(int tty, pid_t group) {
  if (tty < 0) return;
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::pthread_sigmask(SIG_BLOCK, &ttou, &old);
  ::tcsetpgrp(tty, group);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

int waitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw systemError("waitpid");
  }
  return status;
}

// Forwards the forwarded signals to `group` while it lives; restores the
// handlers it replaced. A signal this process ignores stays ignored.
class Forwarding {
 public:
  explicit Forwarding(pid_t group) {
    gChildGroup = group;
    for (size_t i = 0; i < saved_.size(); ++i) {
      ::sigaction(kForwardedSignals[i], nullptr, &saved_[i]);
      bool ignored = (saved_[i].sa_flags & SA_SIGINFO) == 0 && saved_[i].sa_handler == SIG_IGN;
      if (ignored) continue;
      struct sigaction forward {};
      forward.sa_handler = forwardToChild;
      sigemptyset(&forward.sa_mask);
      forward.sa_flags = SA_RESTART;
      ::sigaction(kForwardedSignals[i], &forward, nullptr);
    }
  }
  ~Forwarding() {
    for (size_t i = 0; i < saved_.size(); ++i)
      ::sigaction(kForwardedSignals[i], &saved_[i], nullptr);
    gChildGroup = 0;
  }
  Forwarding(const Forwarding&) = delete;
  Forwarding& operator=(const Forwarding&) = delete;

 private:
  std::array<struct sigaction, std::size(kForwardedSignals)> saved_{};
};

struct StatusPipe {
  UniqueFd read;
  UniqueFd write;
};

StatusPipe makeStatusPipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw systemError("pipe2");
  return StatusPipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// This process's environment, plus the status pipe's variable when `fd` >= 0.
std::vector<std::string> childEnvironment(int fd) {
  const std::string name = std::string(kStatusFdVariable) + "=";
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, name.c_str(), name.size()) != 0) env.push_back(*e);
  }
  if (fd >= 0) env.push_back(std::string(kStatusFdVariable) + "=" + std::to_string(fd));
  return env;
}

// The supervised child: its own process group (and the terminal, when this
// process had it), the forwarded signals still blocked, the status pipe's
// write end kept open across exec.
[[noreturn]] void becomeSupervised(int tty, int statusFd, char* const* argv, char* const* envp) {
  ::setpgid(0, 0);
  giveTerminal(tty, ::getpid());
  if (statusFd >= 0) ::fcntl(statusFd, F_SETFD, 0);
  execOrExit(argv, envp);
}

// The program's wait status as `start` wrote it, if it did.
bool readStatus(int fd, int& status) {
  ssize_t n;
  do {
    n = ::read(fd, &status, sizeof status);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof status);
}

// The status pipe `supervise` named, taken out of the environment so the
// program does not see it. Invalid when there is none.
UniqueFd takeStatusFd() {
  const char* text = std::getenv(kStatusFdVariable);
  if (text == nullptr) return UniqueFd();
  char* end = nullptr;
  long fd = std::strtol(text, &end, 10);
  ::unsetenv(kStatusFdVariable);
  if (*end != '\0' || fd < 0 || ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC) != 0) {
    return UniqueFd();
  }
  return UniqueFd(static_cast<int>(fd));
}

[[noreturn]] void becomeProgram(pid_t parent, char* const* argv) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(128 + SIGKILL);  // `start` died already
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  execOrExit(argv, environ);
}

}  // namespace

int superviseChild(const std::vector<std::string>& argv, bool statusPipe) {
  std::vector<char*> args = cStrings(argv);
  StatusPipe pipe = statusPipe ? makeStatusPipe() : StatusPipe{};
  std::vector<std::string> env = childEnvironment(pipe.write.get());
  std::vector<char*> envp = cStrings(env);
  int tty = foregroundTerminal();
  sigset_t forwarded = forwardedSet(), old;
  ::pthread_sigmask(SIG_BLOCK, &forwarded, &old);
  pid_t pid = ::fork();
  if (pid == 0) becomeSupervised(tty, pipe.write.get(), args.data(), envp.data());
  if (pid < 0) {
    std::system_error error = systemError("fork " + argv.at(0));
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw error;
  }
  ::setpgid(pid, pid);  // here too, so a signal forwarded at once finds the group
  giveTerminal(tty, pid);
  pipe.write.reset();
  int status = 0;
  {
    Forwarding forwarding(pid);
    ::pthread_sigmask(SIG_UNBLOCK, &forwarded, nullptr);
    status = waitFor(pid);
    ::pthread_sigmask(SIG_BLOCK, &forwarded, nullptr);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  giveTerminal(tty, ::getpgrp());
  int programStatus = 0;
  if (pipe.read && readStatus(pipe.read.get(), programStatus)) return programStatus;
  return status;
}

int startProgram(const std::vector<std::string>& argv) {
  sigset_t forwarded = forwardedSet();
  ::pthread_sigmask(SIG_BLOCK, &forwarded, nullptr);
  UniqueFd statusFd = takeStatusFd();
  std::vector<char*> args = cStrings(argv);
  pid_t self = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) becomeProgram(self, args.data());
  if (pid < 0) throw systemError("fork " + argv.at(0));
  int status = waitFor(pid);
  if (statusFd) {
    [[maybe_unused]] ssize_t n = ::write(statusFd.get(), &status, sizeof status);
  }
  return shellStatus(status);
}

[[noreturn]] void exitLike(int waitStatus) {
  if (WIFSIGNALED(waitStatus)) {
    int signal = WTERMSIG(waitStatus);
    struct rlimit noCore {};
    ::setrlimit(RLIMIT_CORE, &noCore);
    ::signal(signal, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, signal);
    ::pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    ::raise(signal);
  }
  ::_exit(shellStatus(waitStatus));
}

int runSandboxTool(const std::vector<std::string>& args) {
  bool valid =
      args.size() >= 3 && args[1] == "--" && (args[0] == "supervise" || args[0] == "start");
  if (!valid) {
    std::fprintf(stderr,
                 "%sdistrun-sandbox: expected 'supervise -- PROGRAM [ARGS]' or "
                 "'start -- PROGRAM [ARGS]': distrun runs it for workers in a container\n",
                 kErrorPrefix);
    return 64;
  }
  std::vector<std::string> program(args.begin() + 2, args.end());
  try {
    if (args[0] == "start") return startProgram(program);
    exitLike(superviseChild(program, true));
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "%sdistrun-sandbox: %s\n", kErrorPrefix, e.what());
    return 71;
  }
}

}  // namespace distrun::container
