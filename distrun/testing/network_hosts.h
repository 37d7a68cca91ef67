#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace distrun::testing {

// Hosts of a cluster on one machine: each a Linux network namespace with
// its own name (its UTS name as `hostname` says it), its own /etc/hosts
// (/etc/netns/NS/hosts, bound over /etc/hosts for what runs there) and two
// interfaces, a management one (`eth0`, 10.10.0.N/24, the address its
// name resolves to) and a fast one named like LUMI's Slingshot (`hsn0`,
// 10.20.0.N/24, `NAME-hsn0` in the hosts files), each network a bridge of
// the machine's. Host N (from 1) is `nid00N`. A link may be capped (tbf),
// a host cut off, and a set of hosts split from the rest; everything is
// removed when the object goes, and what a killed test left (its pid gone)
// when the next one starts.
//
// Needs root, iproute2 and util-linux's unshare; available() says why not.
class NetworkHosts {
 public:
  // Makes `count` hosts (1 to 9). Throws std::runtime_error naming the
  // command that failed.
  explicit NetworkHosts(int count);
  ~NetworkHosts();
  NetworkHosts(const NetworkHosts&) = delete;
  NetworkHosts& operator=(const NetworkHosts&) = delete;

  // Empty when hosts can be made here, else why not (for GTEST_SKIP).
  static std::string unavailable();

  int count() const { return count_; }
  // Host `host` (from 1): its name, its management and fast addresses.
  static std::string name(int host);
  static std::string managementAddress(int host);
  static std::string fastAddress(int host);

  // A shell command that runs `command` (itself a shell command) on host
  // `host`: in its namespace, with its name and hosts file.
  std::string on(int host, const std::string& command) const;
  // The shell words that run the program and arguments after them on host
  // `host` (what on() puts before `sh -c COMMAND`).
  std::string runsOn(int host) const;

  // The shell words of a command prefix that hands the hosts to a script:
  // NETWORK_HOSTS=count and, for each host N, NETWORK_HOST_N=runsOn(N)
  // (what distrun-network-hosts and distrun/testing/local_slurm.sh read).
  std::string environment() const;
  // Gives this machine (the root namespace) an address on the management
  // network, so that its daemons (slurmctld) and clients reach the hosts;
  // returns it. One set of hosts at a time may do this: their networks'
  // addresses are the same.
  std::string reachFromHere();

  // Caps both directions of host `host`'s fast link at `megabitsPerSecond`.
  void capFastLink(int host, int megabitsPerSecond);
  // Takes host `host`'s links down (both networks): it is cut off.
  void cut(int host);
  // Splits `hosts` from the rest on both networks: each side still
  // reaches its own.
  void partition(const std::vector<int>& hosts);
  // Undoes cut() and partition().
  void heal();

  // Bytes host `host` sent on its interface `interface` since it was made.
  std::uint64_t sentBytes(int host, const std::string& interface) const;
  // Its /etc/hosts line for `name` is replaced by `address` (a host whose
  // name resolves to an address the others cannot reach).
  void resolveOn(int host, const std::string& name, const std::string& address);

 private:
  std::string ns(int host) const;
  std::string rootEnd(int host, char network) const;  // the veth end on the bridge
  std::string bridge(const std::string& which) const;
  void makeHost(int host);
  void writeHostsFile(int host) const;
  void removeAll();

  int count_;
  std::string id_;  // "<pid>_<serial>": stale hosts are those of dead pids
  std::vector<std::vector<std::pair<std::string, std::string>>> hostsFiles_;
};

}  // namespace distrun::testing
