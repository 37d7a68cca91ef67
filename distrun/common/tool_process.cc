#include "distrun/common/tool_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <csignal>

#include "distrun/common/error.h"
#include "distrun/common/process.h"
#include "distrun/common/sigpipe.h"
#include "distrun/common/unique_fd.h"
#include "distrun/common/wait_status.h"

namespace distrun {
namespace {

using Monotonic = std::chrono::steady_clock;
using Deadline = std::optional<Monotonic::time_point>;

// How long a killed tool may take to be reaped: one stuck in the kernel (a
// hung file system) is left behind rather than waited on.
constexpr std::chrono::seconds kReapWait{2};

// A started tool: its pid and our ends of its three pipes.
struct Child {
  pid_t pid = -1;
  UniqueFd in, out, err;
};

std::optional<std::vector<std::string>> variablesOf(
    const std::optional<std::map<std::string, std::string>>& environment) {
  if (!environment) return std::nullopt;
  std::vector<std::string> variables;
  for (const auto& [name, value] : *environment) variables.push_back(name + "=" + value);
  return variables;
}

Child spawn(const std::vector<std::string>& argv,
            const std::optional<std::map<std::string, std::string>>& environment, bool ownGroup) {
  Pipe in = makePipe("a tool's input"), out = makePipe("a tool's output"),
       err = makePipe("a tool's output");
  // The tool is looked up on the PATH of its own environment.
  const pid_t pid =
      startProcess({.argv = argv,
                    .environment = variablesOf(environment),
                    .pathOfItsEnvironment = true,
                    .descriptors = {{.target = STDIN_FILENO, .source = in.read.get()},
                                    {.target = STDOUT_FILENO, .source = out.write.get()},
                                    {.target = STDERR_FILENO, .source = err.write.get()}},
                    .ownProcessGroup = ownGroup});
  // Writes give way when the tool's input is full, so that its output,
  // which it may be blocked writing, can be read meanwhile.
  if (::fcntl(in.write.get(), F_SETFL, O_NONBLOCK) != 0) {
    throw SystemError("fcntl", "a tool's input", errno);
  }
  return {pid, std::move(in.write), std::move(out.read), std::move(err.read)};
}

int pollTimeoutMs(const Deadline& deadline) {
  if (!deadline) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Monotonic::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
}

void readInto(const pollfd& polled, UniqueFd& fd, std::string& text) {
  if (polled.revents == 0) return;
  std::array<char, 4096> buffer;
  ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
  if (n <= 0)
    fd.reset();
  else
    text.append(buffer.data(), static_cast<size_t>(n));
}

void feed(const std::string& input, size_t& written, UniqueFd& in) {
  ssize_t n = writeWithoutSigpipe(in.get(), input.data() + written, input.size() - written);
  if (n > 0) written += static_cast<size_t>(n);
  if ((n < 0 && errno != EAGAIN) || written == input.size()) in.reset();
}

// Feeds `input` and drains both outputs until the tool closes them (true)
// or the deadline passes (false).
bool exchange(const std::string& input, Child& child, ToolResult& result,
              const Deadline& deadline) {
  size_t written = 0;
  if (input.empty()) child.in.reset();
  while (child.out || child.err) {
    if (deadline && Monotonic::now() >= *deadline) return false;
    std::array<pollfd, 3> fds = {pollfd{child.out.get(), POLLIN, 0},
                                 pollfd{child.err.get(), POLLIN, 0},
                                 pollfd{child.in.get(), POLLOUT, 0}};
    if (::poll(fds.data(), fds.size(), pollTimeoutMs(deadline)) < 0 && errno != EINTR) {
      throw SystemError("poll", "a tool's output", errno);
    }
    readInto(fds[0], child.out, result.out);
    readInto(fds[1], child.err, result.err);
    if (child.in && fds[2].revents != 0) feed(input, written, child.in);
  }
  return true;
}

// Reaps the tool once it ends (its exit code), or nullopt when it is still
// running at `deadline`.
std::optional<int> reapBy(pid_t pid, Monotonic::time_point deadline) {
  int status = 0;
  for (;;) {
    pid_t reaped = ::waitpid(pid, &status, WNOHANG);
    if (reaped == pid) return shellStatus(status);
    if (reaped < 0 && errno != EINTR) throw SystemError("waitpid", "a tool", errno);
    if (Monotonic::now() >= deadline) return std::nullopt;
    ::usleep(5'000);
  }
}

// Kills the tool's whole group and reaps the tool, waiting kReapWait at most.
int killAndReap(pid_t pid) {
  ::kill(-pid, SIGKILL);
  try {
    return reapBy(pid, Monotonic::now() + kReapWait).value_or(128 + SIGKILL);
  } catch (const SystemError&) {
    return 128 + SIGKILL;
  }
}

}  // namespace

ToolResult runTool(const std::vector<std::string>& argv, const std::string& input) {
  Child child = spawn(argv, std::nullopt, /*ownGroup=*/false);
  ToolResult result;
  exchange(input, child, result, std::nullopt);
  result.exitCode = waitForProcess(child.pid);
  return result;
}

ToolResult runToolWithin(const ToolRequest& request) {
  Child child = spawn(request.argv, request.environment, /*ownGroup=*/true);
  const Monotonic::time_point deadline = Monotonic::now() + request.limit;
  ToolResult result;
  std::optional<int> exitCode;
  try {
    // A tool that closed its output may still run: its end is awaited too.
    if (exchange(request.input, child, result, deadline)) exitCode = reapBy(child.pid, deadline);
  } catch (...) {
    killAndReap(child.pid);
    throw;
  }
  result.timedOut = !exitCode;
  result.exitCode = exitCode ? *exitCode : killAndReap(child.pid);
  return result;
}

}  // namespace distrun
