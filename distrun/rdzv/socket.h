#pragma once

#include <chrono>
#include <string>

namespace distrun::rdzv {

using Clock = std::chrono::steady_clock;

// Binds and listens on `host`:`port` (host "" or "0.0.0.0": every IPv4
// address; port 0: any free port), non-blocking and close-on-exec. Stores
// the bound port in *boundPort. Returns the socket, which the caller owns
// (hold it in a UniqueFd). Throws SystemError naming the address and the
// call that failed (socket, setsockopt, bind, listen, getsockname).
int listenTcp(const std::string& host, int port, int* boundPort);

// The address a store should bind so that only the address its clients are
// told to reach (`reachHost`) listens (docs/security.md, "Interfaces"):
// that host's first IPv4 address when it is one of this machine's, except a
// loopback address for a job of several nodes (Debian names the host
// 127.0.1.1 in /etc/hosts while the other nodes reach it through DNS);
// otherwise, or when `reachHost` does not resolve, "0.0.0.0" (every
// address: the clients' name for this node may resolve here to an address
// that is not the one they reach).
std::string storeBindAddress(const std::string& reachHost, bool severalNodes);

// Connects to `host`:`port`, retrying refused connections until `deadline`
// (the peer may not listen yet). Throws TimeoutError naming the address and
// the last error when the deadline passes, ConfigError when `host` does not
// resolve, SystemError when a socket call fails. The returned socket is
// blocking, close-on-exec, TCP_NODELAY, and the caller owns it (UniqueFd).
int connectTcp(const std::string& host, int port, Clock::time_point deadline);

// Writes all of `data` with MSG_NOSIGNAL, so a peer that closed is a
// RendezvousError naming `peer`, never a SIGPIPE (docs/development.md).
void writeAll(int fd, const std::string& data, const std::string& peer);

// Reads at least one byte into `out` (appending), waiting until `deadline`
// (Clock::time_point::max(): a plain blocking read, no poll).
// Returns false at the deadline; throws RendezvousError when the peer
// closed or the read failed.
bool readSome(int fd, std::string& out, Clock::time_point deadline, const std::string& peer);

}  // namespace distrun::rdzv
