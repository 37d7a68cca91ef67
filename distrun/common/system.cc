#include "distrun/common/system.h"

#include <netinet/in.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

namespace distrun {

namespace {

struct CpuSetDeleter {
  void operator()(cpu_set_t* set) const { CPU_FREE(set); }
};
using CpuSet = std::unique_ptr<cpu_set_t, CpuSetDeleter>;

// Far above any kernel's CPU limit: a mask still wider is not a size problem.
constexpr int kMaxCpus = 1 << 20;

// The affinity mask in a set of `cpus` bits; nullptr when the kernel's mask
// is wider (EINVAL: more than `cpus` CPUs configured).
CpuSet readAffinity(int cpus) {
  CpuSet set(CPU_ALLOC(cpus));
  if (!set) throw SystemError("CPU_ALLOC", std::to_string(cpus), ENOMEM);
  if (::sched_getaffinity(0, CPU_ALLOC_SIZE(cpus), set.get()) == 0) return set;
  if (errno == EINVAL && cpus < kMaxCpus) return nullptr;
  throw SystemError("sched_getaffinity", "this process", errno);
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

std::string executablePath(const char* argv0) {
  char path[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string(argv0);
}

HostFacts readHostFacts() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    throw SystemError("gethostname", "", errno);
  }
  return HostFacts{name, static_cast<int>(usableCpus().size())};
}

// A machine may have more CPUs than a cpu_set_t holds (CPU_SETSIZE, 1024):
// the set grows until the kernel's mask fits.
std::vector<int> usableCpus() {
  for (int size = CPU_SETSIZE;; size *= 2) {
    CpuSet set = readAffinity(size);
    if (!set) continue;
    const size_t bytes = CPU_ALLOC_SIZE(size);
    std::vector<int> cpus;
    for (int cpu = 0; cpu < size; ++cpu) {
      if (CPU_ISSET_S(cpu, bytes, set.get())) cpus.push_back(cpu);
    }
    return cpus;
  }
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

std::optional<std::string> readFileIfPresent(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return content.str();
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

namespace {

// The first port of the kernel's ephemeral range (ip_local_port_range),
// 32768 where it cannot be read.
int firstEphemeralPort() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 0;
  return in >> first && first > 0 ? first : 32768;
}

}  // namespace

int pickFreeTcpPort() {
  const int first = kFirstPickedPort;
  const int last = firstEphemeralPort() - 1;
  if (last - first >= 256) {
    std::random_device seed;
    std::uniform_int_distribution<int> port(first, last);
    for (int attempt = 0; attempt < 32; ++attempt) {
      const int candidate = port(seed);
      if (tcpPortIsFree(candidate)) return candidate;
    }
  }
  int port = bindTcp(0);  // a site whose ephemeral range starts low, or a busy one
  if (port < 0) throw SystemError("bind", "0.0.0.0:0", errno);
  return port;
}

void raiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

std::string userFolder(const Environment& env) {
  std::string tmp = env.getOr("TMPDIR", "");
  if (tmp.empty()) tmp = "/tmp";
  const std::string mine = tmp + "/distrun-" + std::to_string(::getuid());
  if (::mkdir(mine.c_str(), 0700) != 0 && errno != EEXIST) throw SystemError("mkdir", mine, errno);
  struct stat st {};
  if (::lstat(mine.c_str(), &st) != 0) throw SystemError("lstat", mine, errno);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 022) != 0) {
    throw ConfigError(mine + " is not a folder of this user's (uid " + std::to_string(::getuid()) +
                      ") that only it may write: remove it, or set TMPDIR to another folder");
  }
  return mine;
}

}  // namespace distrun
