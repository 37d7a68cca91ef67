#pragma once

#include <chrono>
#include <string>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

namespace distrun::rdzv {

using Clock = std::chrono::steady_clock;

// The time from now until `deadline`; zero once it has passed.
std::chrono::milliseconds timeLeft(Clock::time_point deadline);

// now + `timeout`; no deadline (time_point::max()) when that does not fit,
// as for milliseconds::max().
Clock::time_point deadlineAfter(std::chrono::milliseconds timeout);

// Binds and listens on `host`:`port` (host "" or "0.0.0.0": every IPv4
// address; port 0: any free port), non-blocking and close-on-exec. Stores
// the bound port in *boundPort. Returns the socket, which the caller owns
// (hold it in a UniqueFd). Throws SystemError naming the address and the
// call that failed (socket, setsockopt, bind, listen, getsockname).
int listenTcp(const std::string& host, int port, int* boundPort);

// The port a bound socket listens on (getsockname). Throws SystemError
// naming `where`.
int boundPort(int fd, const std::string& where);

// The address a store should bind so that only the address its clients are
// told to reach (`reachHost`) listens (docs/security.md, "Interfaces"):
// that host's first IPv4 address when it is one of this machine's, except a
// loopback address for a job of several nodes (Debian names the host
// 127.0.1.1 in /etc/hosts while the other nodes reach it through DNS);
// otherwise, or when `reachHost` does not resolve, "0.0.0.0" (every
// address: the clients' name for this node may resolve here to an address
// that is not the one they reach).
std::string storeBindAddress(const std::string& reachHost, bool severalNodes);

// Whether `host` resolves to an address of this machine (loopback
// included); false when it does not resolve.
bool isThisMachine(const std::string& host);

// Connects to `host`:`port`, retrying refused connections until `deadline`
// (the peer may not listen yet). Throws TimeoutError naming the address and
// the last error when the deadline passes, ConfigError when `host` does not
// resolve, SystemError when a socket call fails. The returned socket is
// blocking, close-on-exec, TCP_NODELAY, and the caller owns it (UniqueFd).
int connectTcp(const std::string& host, int port, Clock::time_point deadline);

// The IPv4 address `host` resolves to here, as text ("10.1.0.7"). Throws
// ConfigError naming `host` when it does not resolve.
std::string resolvedAddress(const std::string& host);

// One connection attempt of connectTcp's, no retry: `fd` is the connected
// socket (as connectTcp's), or empty with `error` the errno (ECONNREFUSED:
// nothing listens there; ETIMEDOUT: `deadline` passed with no answer, as
// from a host that is down). Throws as connectTcp does for other failures.
struct ConnectAttempt {
  UniqueFd fd;
  int error = 0;
};
ConnectAttempt tryConnectTcp(const std::string& host, int port, Clock::time_point deadline);

// TCP keepalive on the store's connections, both ends (StoreServer's
// accepted sockets, StoreClient's, a succession probe's), so that a peer
// whose host died, or whose path went silent, is seen within
// idle + probes x interval = 5 s, not never (an idle TCP connection sends
// nothing). A peer process that dies is seen at once either way (its kernel
// closes the connection). TCP_USER_TIMEOUT bounds data sent and not
// acknowledged the same way (keepalive probes only idle connections; without
// it a request in flight to a dead host waits out ~15 min of retransmits).
// Short on purpose: the kernel of a live host answers probes even when the
// process is stopped or busy, so only a dead host or a cut network fails
// them.
inline constexpr int kKeepAliveIdleSeconds = 2;
inline constexpr int kKeepAliveIntervalSeconds = 1;
inline constexpr int kKeepAliveProbes = 3;
inline constexpr int kUserTimeoutMs =
    (kKeepAliveIdleSeconds + kKeepAliveProbes * kKeepAliveIntervalSeconds) * 1000;

// Sets the options above on `fd`. Throws SystemError naming `where`.
void setKeepAlive(int fd, const std::string& where);

// The connection to the rendezvous store broke (its process or host died,
// or it closed this connection): a RendezvousError an elastic agent answers
// by looking for the store's successor (docs/launcher.md, "Store
// succession").
class StoreLostError : public RendezvousError {
 public:
  using RendezvousError::RendezvousError;
};

// Writes all of `data` with MSG_NOSIGNAL, so a peer that closed is a
// StoreLostError naming `peer`, never a SIGPIPE (docs/development.md).
void writeAll(int fd, const std::string& data, const std::string& peer);

// Reads at least one byte into `out` (appending), waiting until `deadline`
// (Clock::time_point::max(): a plain blocking read, no poll).
// Returns false at the deadline; throws StoreLostError when the peer
// closed or the read failed.
bool readSome(int fd, std::string& out, Clock::time_point deadline, const std::string& peer);

}  // namespace distrun::rdzv
