#include "distrun/rdzv/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

namespace distrun::rdzv {

namespace {

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) ::freeaddrinfo(list);
  }
};

void resolve(const std::string& host, int port, bool passive, AddrInfo& out) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  std::string service = std::to_string(port);
  const char* node = host.empty() ? nullptr : host.c_str();
  int rc = ::getaddrinfo(node, service.c_str(), &hints, &out.list);
  if (rc != 0) {
    throw ConfigError(fmt::format("cannot resolve host '{}': {}", host, ::gai_strerror(rc)));
  }
}

int msUntil(Clock::time_point deadline) { return static_cast<int>(timeLeft(deadline).count()); }

int fileFlags(int fd, const std::string& where) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) throw SystemError("fcntl", where, errno);
  return flags;
}

void setFileFlags(int fd, int flags, const std::string& where) {
  if (::fcntl(fd, F_SETFL, flags) != 0) throw SystemError("fcntl", where, errno);
}

void setOption(int fd, int level, int option, const std::string& where, int value = 1) {
  if (::setsockopt(fd, level, option, &value, sizeof(value)) != 0) {
    throw SystemError("setsockopt", where, errno);
  }
}

// connect() that gives up at `deadline`, not after the kernel's SYN
// retries (minutes). Returns 0 or the errno; the socket ends blocking.
int connectBefore(int fd, const addrinfo* addr, Clock::time_point deadline,
                  const std::string& where) {
  const int flags = fileFlags(fd, where);
  setFileFlags(fd, flags | O_NONBLOCK, where);
  int err = 0;
  if (::connect(fd, addr->ai_addr, addr->ai_addrlen) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, msUntil(deadline)) == 1) {
        socklen_t len = sizeof(err);
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
          throw SystemError("getsockopt", where, errno);
        }
      } else {
        err = ETIMEDOUT;
      }
    }
  }
  setFileFlags(fd, flags, where);
  return err;
}

}  // namespace

std::chrono::milliseconds timeLeft(Clock::time_point deadline) {
  return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                  std::chrono::milliseconds(0));
}

Clock::time_point deadlineAfter(std::chrono::milliseconds timeout) {
  using std::chrono::milliseconds;
  const Clock::time_point now = Clock::now();
  if (timeout >= std::chrono::duration_cast<milliseconds>(Clock::time_point::max() - now)) {
    return Clock::time_point::max();
  }
  return now + timeout;
}

int listenTcp(const std::string& host, int port, int* boundPort) {
  AddrInfo ai;
  resolve(host == "0.0.0.0" ? "" : host, port, true, ai);
  std::string where = fmt::format("{}:{}", host.empty() ? "0.0.0.0" : host, port);
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) throw SystemError("socket", where, errno);
  setOption(fd.get(), SOL_SOCKET, SO_REUSEADDR, where);
  if (::bind(fd.get(), ai.list->ai_addr, ai.list->ai_addrlen) != 0) {
    throw SystemError("bind", where, errno);
  }
  if (::listen(fd.get(), 4096) != 0) throw SystemError("listen", where, errno);
  *boundPort = rdzv::boundPort(fd.get(), where);
  return fd.release();
}

int boundPort(int fd, const std::string& where) {
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    throw SystemError("getsockname", where, errno);
  }
  return ntohs(bound.sin_port);
}

void setKeepAlive(int fd, const std::string& where) {
  setOption(fd, SOL_SOCKET, SO_KEEPALIVE, where);
  setOption(fd, IPPROTO_TCP, TCP_KEEPIDLE, where, kKeepAliveIdleSeconds);
  setOption(fd, IPPROTO_TCP, TCP_KEEPINTVL, where, kKeepAliveIntervalSeconds);
  setOption(fd, IPPROTO_TCP, TCP_KEEPCNT, where, kKeepAliveProbes);
  setOption(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, where, kUserTimeoutMs);
}

namespace {

// `addr` as text ("10.1.0.7").
std::string addressText(const sockaddr_in& addr) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  return text;
}

const sockaddr_in& firstAddress(const AddrInfo& ai) {
  return *reinterpret_cast<const sockaddr_in*>(ai.list->ai_addr);
}

// Whether `addr` is one of this machine's: binding it (port 0) succeeds.
bool isLocal(const sockaddr_in& addr) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in any = addr;
  any.sin_port = 0;
  return fd && ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&any), sizeof(any)) == 0;
}

}  // namespace

bool isThisMachine(const std::string& host) {
  AddrInfo ai;
  try {
    resolve(host, 0, false, ai);
  } catch (const ConfigError&) {
    return false;
  }
  return isLocal(firstAddress(ai));
}

std::string storeBindAddress(const std::string& reachHost, bool severalNodes) {
  AddrInfo ai;
  try {
    resolve(reachHost, 0, false, ai);
  } catch (const ConfigError&) {
    return "0.0.0.0";  // the clients' own connect names the host that does not resolve
  }
  const sockaddr_in& addr = firstAddress(ai);
  const bool loopback = (ntohl(addr.sin_addr.s_addr) >> 24) == 127;
  if ((loopback && severalNodes) || !isLocal(addr)) return "0.0.0.0";
  return addressText(addr);
}

namespace {

ConnectAttempt attemptConnect(const addrinfo* addr, Clock::time_point deadline,
                              const std::string& where) {
  ConnectAttempt attempt;
  attempt.fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!attempt.fd) throw SystemError("socket", where, errno);
  attempt.error = connectBefore(attempt.fd.get(), addr, deadline, where);
  if (attempt.error != 0) {
    attempt.fd.reset();
    return attempt;
  }
  setOption(attempt.fd.get(), IPPROTO_TCP, TCP_NODELAY, where);
  return attempt;
}

}  // namespace

std::string resolvedAddress(const std::string& host) {
  AddrInfo ai;
  resolve(host, 0, false, ai);
  return addressText(firstAddress(ai));
}

ConnectAttempt tryConnectTcp(const std::string& host, int port, Clock::time_point deadline) {
  AddrInfo ai;
  resolve(host, port, false, ai);
  return attemptConnect(ai.list, deadline, fmt::format("{}:{}", host, port));
}

int connectTcp(const std::string& host, int port, Clock::time_point deadline) {
  AddrInfo ai;
  resolve(host, port, false, ai);
  const std::string where = fmt::format("{}:{}", host, port);
  int lastError = 0;
  auto pause = std::chrono::milliseconds(10);
  while (true) {
    ConnectAttempt attempt = attemptConnect(ai.list, deadline, where);
    if (attempt.fd) return attempt.fd.release();
    lastError = attempt.error;
    if (Clock::now() + pause >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
  const std::string address = addressText(firstAddress(ai));
  throw TimeoutError(fmt::format("cannot reach the rendezvous store at {}{}: {}", where,
                                 address == host ? "" : " (" + address + " from here)",
                                 std::strerror(lastError)));
}

void writeAll(int fd, const std::string& data, const std::string& peer) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw StoreLostError(
          fmt::format("lost the rendezvous store at {}: {}", peer, std::strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
}

bool readSome(int fd, std::string& out, Clock::time_point deadline, const std::string& peer) {
  while (true) {
    if (deadline != Clock::time_point::max()) {  // else the read below blocks: no poll needed
      pollfd p{fd, POLLIN, 0};
      int rc = ::poll(&p, 1, msUntil(deadline));
      if (rc < 0 && errno == EINTR) continue;
      if (rc == 0) return false;
    }
    char buffer[65536];
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw StoreLostError(fmt::format("lost the rendezvous store at {}: {}", peer,
                                       n == 0 ? "connection closed" : std::strerror(errno)));
    }
    out.append(buffer, static_cast<size_t>(n));
    return true;
  }
}

}  // namespace distrun::rdzv
