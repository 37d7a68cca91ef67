#pragma once

#include <optional>
#include <string>
#include <vector>

#include "distrun/doctor/check_result.h"

// Private to distrun/doctor: the "network" check's facts, reader and judge
// (docs/doctor.md, "The node's system").

namespace distrun::doctor {

// One network interface of the node, as getifaddrs lists it.
struct NetInterface {
  std::string name;
  bool up = false;       // IFF_UP: configured up
  bool running = false;  // IFF_RUNNING: its link is up too
  bool loopback = false;
  std::vector<std::string> addresses;  // IPv4 and IPv6, numeric
  // Up, with its link, and with an address: what NCCL and Gloo can use.
  bool usable() const { return up && running && !addresses.empty(); }
};

// Every interface of this node, by name. Never throws: getifaddrs failing
// gives none.
std::vector<NetInterface> readInterfaces();

// NCCL_SOCKET_IFNAME's grammar (NCCL's environment variables page): a
// comma list of name prefixes; a leading `^` makes it a list of interfaces
// NOT to use, a leading `=` (after any `^`) makes the names exact rather
// than prefixes. A ":PORT" after a name is NCCL's and ignored here.
struct IfnameFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;
  bool matches(const std::string& interface) const;  // of one name, before `exclude`
};
IfnameFilter parseNcclIfname(const std::string& value);

// Where the interface variables came from, for the fix.
struct NetworkSettings {
  std::optional<std::string> ncclIfname;  // NCCL_SOCKET_IFNAME
  std::optional<std::string> glooIfname;  // GLOO_SOCKET_IFNAME: a comma list of exact names
  // The site profile that sets them (empty: none, or the user's own value).
  std::string ncclSite, glooSite;
};

// "network": with neither variable set, ok listing the usable interfaces
// (NCCL and Gloo choose for themselves). NCCL_SOCKET_IFNAME fails when no
// usable interface passes it, warns when one of its names matches none
// (a rail left out); GLOO_SOCKET_IFNAME fails when a name it lists is not a
// usable interface, and warns when it lists several (PyTorch spreads over
// them; distrun's own communicator takes one name). Details list the
// node's interfaces with their state.
CheckResult judgeNetwork(const std::vector<NetInterface>& interfaces, const NetworkSettings& s);

}  // namespace distrun::doctor
