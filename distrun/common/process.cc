#include "distrun/common/process.h"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/wait_status.h"

extern char** environ;

namespace distrun {

namespace {

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

std::string pathOf(const ProcessSpec& spec) {
  if (spec.pathOfItsEnvironment && spec.environment) {
    for (const std::string& variable : *spec.environment) {
      if (variable.starts_with("PATH=")) return variable.substr(5);
    }
    return kDefaultProgramPath;
  }
  const char* path = std::getenv("PATH");
  return path != nullptr ? path : kDefaultProgramPath;
}

// Everything the child needs, made before vfork: it may only make system
// calls, and nothing it allocates would be freed.
struct PreparedExec {
  explicit PreparedExec(const ProcessSpec& spec)
      : program(findProgram(spec.argv.at(0), pathOf(spec))),
        argv(cStrings(spec.argv)),
        envp(spec.environment ? cStrings(*spec.environment) : std::vector<char*>{}),
        ownEnvironment(spec.environment.has_value()) {
    // execvp's way with a file the kernel cannot run (ENOEXEC): a script.
    byShell = {const_cast<char*>("/bin/sh"), program ? program->data() : nullptr};
    byShell.insert(byShell.end(), argv.begin() + 1, argv.end());
    CPU_ZERO(&cpuSet);
    for (int cpu : spec.cpus) CPU_SET(cpu, &cpuSet);
  }
  char* const* environment() const { return ownEnvironment ? envp.data() : environ; }

  std::optional<std::string> program;
  std::vector<char*> argv, envp, byShell;
  bool ownEnvironment;
  cpu_set_t cpuSet;
};

void writeAll(const char* text) {
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

[[noreturn]] void failExec(const ProcessSpec& spec, const char* program, int error) {
  if (spec.explainExecFailure) {
    for (const char* part :
         {kErrorPrefix, "cannot run '", program, "': ", ::strerrordesc_np(error), "\n"}) {
      writeAll(part);
    }
  }
  ::_exit(error == ENOENT ? 127 : 126);
}

void setUpDescriptors(const ProcessSpec& spec) {
  for (const ChildDescriptor& d : spec.descriptors) {
    int source = d.source;
    if (!d.path.empty()) {
      source = ::open(d.path.c_str(), d.openFlags | O_CLOEXEC, 0644);
      if (source < 0) ::_exit(126);
    }
    if (source == d.target) {
      ::fcntl(source, F_SETFD, 0);
    } else {
      ::dup2(source, d.target);
    }
  }
}

// Runs in the child between vfork and exec: system calls only.
[[noreturn]] void becomeProgram(const ProcessSpec& spec, const PreparedExec& exec,
                                const sigset_t& parentMask, pid_t parent) {
  if (spec.ownProcessGroup) ::setpgid(0, 0);
  if (spec.parentDeathSignal != 0) {
    ::prctl(PR_SET_PDEATHSIG, spec.parentDeathSignal);
    if (::getppid() != parent) ::_exit(128 + spec.parentDeathSignal);  // gone already
  }
  for (int signal : spec.defaultSignals) ::signal(signal, SIG_DFL);
  if (!spec.cpus.empty()) ::sched_setaffinity(0, sizeof(cpu_set_t), &exec.cpuSet);
  setUpDescriptors(spec);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, spec.emptySignalMask ? &none : &parentMask, nullptr);
  if (!exec.program) failExec(spec, exec.argv[0], ENOENT);
  char* const* envp = exec.environment();
  ::execve(exec.program->c_str(), exec.argv.data(), envp);
  if (errno == ENOEXEC) ::execve("/bin/sh", exec.byShell.data(), envp);
  failExec(spec, exec.argv[0], errno);
}

// Its own function, so that no local of the caller lives across vfork.
// Every signal is blocked around it: no handler of this process may run in
// the child while it borrows this memory. -1: errno says why.
[[gnu::noinline]] pid_t vforkProgram(const ProcessSpec& spec, const PreparedExec& exec) {
  sigset_t all, mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &mask);
  const pid_t parent = ::getpid();
  const pid_t pid = ::vfork();
  if (pid == 0) becomeProgram(spec, exec, mask, parent);
  const int error = errno;
  ::pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  errno = error;
  return pid;
}

}  // namespace

bool isExecutableFile(const std::string& file) {
  struct stat st {};
  return ::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(file.c_str(), X_OK) == 0;
}

std::optional<std::string> findProgram(const std::string& program, const std::string& path,
                                       const std::string& workingDir) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) return program;
  for (const std::string& folder : split(path, ':')) {
    std::string candidate = (folder.empty() ? "." : folder) + "/" + program;
    const std::string checked = candidate[0] == '/' || workingDir.empty() || workingDir == "."
                                    ? candidate
                                    : workingDir + "/" + candidate;
    if (isExecutableFile(checked)) return candidate;
  }
  return std::nullopt;
}

pid_t startProcess(const ProcessSpec& spec) {
  const PreparedExec exec(spec);
  const pid_t pid = vforkProgram(spec, exec);
  if (pid < 0) throw SystemError("vfork", spec.argv.front(), errno);
  if (spec.ownProcessGroup) ::setpgid(pid, pid);
  return pid;
}

int waitForProcess(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw SystemError("waitpid", std::to_string(pid), errno);
  }
  return shellStatus(status);
}

Pipe makePipe(std::string_view what) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("pipe2", std::string(what), errno);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace distrun
