#pragma once

// The seams of the "hostnames" and "master-port" checks (checks.h declares
// the checks themselves), so that tests need neither a broken DNS nor
// another user's process.
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "distrun/doctor/check_result.h"
#include "distrun/doctor/probe_context.h"

namespace distrun::doctor {

// Whether a host name resolves on this node.
using Resolver = std::function<bool(const std::string& name)>;

// The real Resolver: getaddrinfo finds an address for `name`.
bool resolvesHere(const std::string& name);

// checkHostnames with the resolver given, and the time it may spend before
// it stops and reports how far it got (checkHostnames: 3/4 of ctx.limit()).
CheckResult checkHostnamesWith(const ProbeContext& ctx, const Resolver& resolve,
                               std::chrono::milliseconds budget);

// The process that holds a TCP socket on a local port.
struct PortHolder {
  long pid = 0;
  std::string name;  // its /proc/PID/comm
};

// The process holding `port` on this node, looked up under `procRoot`
// (/proc): the socket's inode in net/tcp and net/tcp6 (a listener first),
// then the PID/fd link that names it. Best effort: nullopt when the socket
// or its owner cannot be seen (another user's process, without root).
// Never throws.
std::optional<PortHolder> findPortHolder(int port, const std::string& procRoot = "/proc");

// checkMasterPort with the /proc it names the port's holder from.
CheckResult checkMasterPortWith(const ProbeContext& ctx, const std::string& procRoot);

}  // namespace distrun::doctor
