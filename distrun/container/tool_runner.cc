#include "distrun/container/tool_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/unique_fd.h"
#include "distrun/common/wait_status.h"

namespace distrun::container {

namespace {

constexpr size_t kRecentBytes = 16 * 1024;
constexpr size_t kTailLines = 12;
constexpr int kPollMs = 200;
constexpr double kGroupGoneSeconds = 2.0;  // the most an interrupt waits for the group
constexpr double kDrainAfterExit = 1.0;    // seconds: output left by the tool's children

volatile sig_atomic_t gCaught = 0;

void onSignal(int signal) {
  if (gCaught == 0) gCaught = signal;
}

double now() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

[[noreturn]] void execChild(const ToolCall& call, int output) {
  const std::vector<std::string>& argv = call.argv;
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  for (int signal : {SIGINT, SIGTERM, SIGPIPE}) ::signal(signal, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ::dup2(devNull, STDIN_FILENO);
  int stdoutFd = output;
  if (!call.stdoutPath.empty()) {
    stdoutFd = ::open(call.stdoutPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (stdoutFd < 0) ::_exit(126);
  }
  ::dup2(stdoutFd, STDOUT_FILENO);
  ::dup2(output, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  ::_exit(errno == ENOENT ? 127 : 126);
}

std::string tailOf(const std::string& recent) {
  std::vector<std::string> kept;
  for (const std::string& line : split(recent, '\n')) {
    const std::string last = line.substr(
        line.rfind('\r') == std::string::npos ? 0 : line.rfind('\r') + 1);  // a bar's last state
    if (!trim(last).empty()) kept.push_back(last);
  }
  if (kept.size() > kTailLines) kept.erase(kept.begin(), kept.end() - kTailLines);
  return join(kept, "\n");
}

// One tool being run: its output, its ticks, the interrupt and its end.
class ToolWatch {
 public:
  ToolWatch(const ToolCall& call, pid_t pid, UniqueFd output, std::function<int()> interrupted,
            double grace)
      : call_(call),
        pid_(pid),
        output_(std::move(output)),
        interrupted_(std::move(interrupted)),
        grace_(grace),
        nextTick_(now() + call.tickSeconds) {}

  ToolExit finish() {
    while (output_ || !exitCode_) step();
    if (sent_ != 0) {
      ::kill(-pid_, SIGKILL);  // anything of the tool's still running
      awaitGroupGone();
      throw BuildInterrupted(sent_);
    }
    return {*exitCode_, tailOf(recent_)};
  }

 private:
  void step() {
    forwardInterrupt();
    pollOutput();
    reap();
    if (sent_ == 0 && call_.onTick && now() >= nextTick_) {
      call_.onTick();
      nextTick_ = now() + call_.tickSeconds;
    }
  }

  // The caller removes the staging folder next: the tool's other processes
  // (mmdebstrap's apt, mksquashfs's workers) must be gone first, not merely
  // signalled. Bounded: a process the kernel keeps (a zombie whose new
  // parent does not reap) must not hang the build.
  void awaitGroupGone() const {
    const double deadline = now() + kGroupGoneSeconds;
    while (::kill(-pid_, 0) == 0 && now() < deadline) ::usleep(20 * 1000);
  }

  void forwardInterrupt() {
    if (sent_ == 0 && interrupted_() != 0) {
      sent_ = interrupted_();
      ::kill(-pid_, sent_);
      killAt_ = now() + grace_;
    }
    if (killAt_ && now() >= *killAt_) {
      ::kill(-pid_, SIGKILL);
      killAt_.reset();
    }
  }

  void pollOutput() {
    if (!output_) {
      ::usleep(kPollMs * 1000);
      return;
    }
    pollfd fd{output_.get(), POLLIN, 0};
    if (::poll(&fd, 1, kPollMs) <= 0) return;  // timeout, or EINTR: the loop looks again
    char buffer[4096];
    const ssize_t n = ::read(output_.get(), buffer, sizeof(buffer));
    if (n <= 0) {
      output_.reset();
      return;
    }
    recent_.append(buffer, static_cast<size_t>(n));
    if (recent_.size() > kRecentBytes) recent_.erase(0, recent_.size() - kRecentBytes);
    if (sent_ == 0 && call_.onOutput) call_.onOutput(recent_);
  }

  void reap() {
    if (exitCode_) {
      if (output_ && now() >= *exitedAt_ + kDrainAfterExit) output_.reset();
      return;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exitCode_ = shellStatus(status);
      exitedAt_ = now();
    }
  }

  const ToolCall& call_;
  pid_t pid_;
  UniqueFd output_;
  std::function<int()> interrupted_;
  double grace_;
  double nextTick_;
  std::string recent_;
  int sent_ = 0;
  std::optional<double> killAt_;
  std::optional<int> exitCode_;
  std::optional<double> exitedAt_;
};

}  // namespace

InterruptCatcher::InterruptCatcher() {
  gCaught = 0;
  struct sigaction action {};
  action.sa_handler = onSignal;  // no SA_RESTART: poll and waitpid return
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &previousInt_);
  ::sigaction(SIGTERM, &action, &previousTerm_);
}

InterruptCatcher::~InterruptCatcher() {
  ::sigaction(SIGINT, &previousInt_, nullptr);
  ::sigaction(SIGTERM, &previousTerm_, nullptr);
}

int InterruptCatcher::caught() const { return gCaught; }

ProcessToolRunner::ProcessToolRunner(std::function<int()> interrupted, double graceSeconds)
    : interrupted_(std::move(interrupted)), graceSeconds_(graceSeconds) {}

ToolExit ProcessToolRunner::run(const ToolCall& call) {
  if (int signal = interrupted_()) throw BuildInterrupted(signal);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("pipe2", call.argv.front(), errno);
  UniqueFd readEnd(fds[0]), writeEnd(fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork", call.argv.front(), errno);
  if (pid == 0) execChild(call, writeEnd.get());
  ::setpgid(pid, pid);  // also in the child: whichever runs first
  writeEnd.reset();
  ToolWatch watch(call, pid, std::move(readEnd), interrupted_, graceSeconds_);
  return watch.finish();
}

}  // namespace distrun::container
