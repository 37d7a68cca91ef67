#include "distrun/container/build_tools.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>

#include "distrun/common/error.h"
#include "distrun/common/process.h"
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

// The tool's input is empty, its output and errors go into `output` (its
// output into call.stdoutPath instead when given), it leads a group of its
// own, and gets SIGTERM if distrun dies (mmdebstrap then cleans up).
ProcessSpec toolProcess(const ToolCall& call, int output) {
  ProcessSpec spec{.argv = call.argv,
                   .descriptors = {{.target = STDIN_FILENO, .path = "/dev/null"}},
                   .ownProcessGroup = true,
                   .parentDeathSignal = SIGTERM,
                   .emptySignalMask = true,
                   .defaultSignals = {SIGINT, SIGTERM, SIGPIPE}};
  if (call.stdoutPath.empty()) {
    spec.descriptors.push_back({.target = STDOUT_FILENO, .source = output});
  } else {
    spec.descriptors.push_back({.target = STDOUT_FILENO,
                                .path = call.stdoutPath,
                                .openFlags = O_WRONLY | O_CREAT | O_TRUNC});
  }
  spec.descriptors.push_back({.target = STDERR_FILENO, .source = output});
  return spec;
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

ProcessBuildTools::ProcessBuildTools(std::function<int()> interrupted, double graceSeconds)
    : interrupted_(std::move(interrupted)), graceSeconds_(graceSeconds) {}

ToolExit ProcessBuildTools::run(const ToolCall& call) {
  if (int signal = interrupted_()) throw BuildInterrupted(signal);
  Pipe output = makePipe(call.argv.front());
  const pid_t pid = startProcess(toolProcess(call, output.write.get()));
  output.write.reset();
  ToolWatch watch(call, pid, std::move(output.read), interrupted_, graceSeconds_);
  return watch.finish();
}

}  // namespace distrun::container
