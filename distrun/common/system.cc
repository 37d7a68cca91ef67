#include "distrun/common/system.h"

#include <netinet/in.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

namespace distrun {

namespace {

int countUsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<int>(online) : 1;
  }
  return CPU_COUNT(&set);
}

// Binds a TCP socket to 0.0.0.0:port and returns the bound port, or -1 with
// errno set when the bind fails.
int bindTcp(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw SystemError("socket", "AF_INET, SOCK_STREAM", errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  // As the stores that will bind it do (PyTorch's TCPStore, ours): a port
  // whose last connections linger in TIME_WAIT is free for them.
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int bound = -1;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      bound = ntohs(addr.sin_port);
    }
  }
  int saved = errno;
  fd.reset();
  errno = saved;
  return bound;
}

}  // namespace

HostFacts readHostFacts() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    throw SystemError("gethostname", "", errno);
  }
  return HostFacts{name, countUsableCpus()};
}

// The command name in parentheses may itself hold ')' and spaces: the
// fields after it start after the last ')'.
std::optional<ProcessStatus> readProcessStatus(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  const size_t close = line.rfind(')');
  ProcessStatus status;
  if (close == std::string::npos ||
      std::sscanf(line.c_str() + close + 1, " %c %ld", &status.state, &status.parentPid) != 2) {
    return std::nullopt;
  }
  return status;
}

bool processExited(long pid) {
  const std::optional<ProcessStatus> status = readProcessStatus(pid);
  return !status || status->state == 'Z' || status->state == 'X';
}

std::string readTextFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw IoError(what + ": cannot open '" + path + "'");
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) throw IoError(what + ": cannot read '" + path + "'");
  return content.str();
}

bool tcpPortIsFree(int port) { return bindTcp(port) == port; }

int pickFreeTcpPort() {
  int port = bindTcp(0);
  if (port < 0) throw SystemError("bind", "0.0.0.0:0", errno);
  return port;
}

void raiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace distrun
