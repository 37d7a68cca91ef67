#include "distrun/common/tool_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "distrun/common/error.h"
#include "distrun/common/sigpipe.h"
#include "distrun/common/unique_fd.h"

namespace distrun {
namespace {

struct Pipe {
  UniqueFd read, write;
};

Pipe makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("pipe2", "a tool's output", errno);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

[[noreturn]] void execChild(const std::vector<std::string>& argv, Pipe& in, Pipe& out, Pipe& err) {
  ::dup2(in.read.get(), STDIN_FILENO);
  ::dup2(out.write.get(), STDOUT_FILENO);
  ::dup2(err.write.get(), STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  ::_exit(errno == ENOENT ? 127 : 126);
}

// Feeds `input` and drains both outputs until the tool closes them.
void exchange(const std::string& input, UniqueFd in, UniqueFd out, UniqueFd err,
              ToolResult& result) {
  size_t written = 0;
  if (input.empty()) in.reset();
  std::array<char, 4096> buffer;
  while (out || err) {
    std::array<pollfd, 3> fds = {pollfd{out.get(), POLLIN, 0}, pollfd{err.get(), POLLIN, 0},
                                 pollfd{in.get(), POLLOUT, 0}};
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      throw SystemError("poll", "a tool's output", errno);
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[static_cast<size_t>(i)].revents == 0) continue;
      UniqueFd& fd = i == 0 ? out : err;
      ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
      if (n <= 0)
        fd.reset();
      else
        (i == 0 ? result.out : result.err).append(buffer.data(), static_cast<size_t>(n));
    }
    if (in && fds[2].revents != 0) {
      ssize_t n = writeWithoutSigpipe(in.get(), input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN) || written == input.size()) in.reset();
    }
  }
}

int waitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw SystemError("waitpid", "a tool", errno);
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

ToolResult runTool(const std::vector<std::string>& argv, const std::string& input) {
  Pipe in = makePipe(), out = makePipe(), err = makePipe();
  pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork", argv.front(), errno);
  if (pid == 0) execChild(argv, in, out, err);
  in.read.reset();
  // Writes give way when the tool's input is full, so that its output,
  // which it may be blocked writing, can be read meanwhile.
  if (::fcntl(in.write.get(), F_SETFL, O_NONBLOCK) != 0) {
    throw SystemError("fcntl", "a tool's input", errno);
  }
  out.write.reset();
  err.write.reset();
  ToolResult result;
  exchange(input, std::move(in.write), std::move(out.read), std::move(err.read), result);
  result.exitCode = waitFor(pid);
  return result;
}

}  // namespace distrun
