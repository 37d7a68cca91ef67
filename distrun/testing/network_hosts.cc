#include "distrun/testing/network_hosts.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>

#include "distrun/common/strings.h"
#include "distrun/testing/command.h"

namespace distrun::testing {

namespace {

// Namespaces are "dr<id>-<host>", the bridges' ports "d<id><m|f><host>",
// the bridges "dr<id><M|F>" and, for a partition, "dr<id>P<M|F>", where
// <id> is "<pid>_<serial>" (the serial counts this process's sets of
// hosts: a namespace deleted goes away a moment later): the pid says whose
// they are, and that fits the kernel's 15 characters.
const std::regex kNamespace(R"(^dr([0-9]+)_[0-9]+-[0-9]+$)");
const std::regex kBridge(R"(^dr([0-9]+)_[0-9]+P?[MF]$)");

std::string nextId() {
  static int serial = 0;
  return fmt::format("{}_{}", ::getpid(), serial++ % 10);
}

void run(const std::string& command) {
  CommandResult r = runCommand(command);
  if (r.exitCode != 0) {
    throw std::runtime_error(
        fmt::format("network hosts: '{}' failed (exit {}): {}", command, r.exitCode, trim(r.err)));
  }
}

// A namespace with every process still in it, and its hosts file.
void removeNamespace(const std::string& ns) {
  runCommand("ip netns pids " + ns + " | xargs -r kill -9; ip netns del " + ns + " 2>/dev/null");
  std::error_code ec;
  std::filesystem::remove_all("/etc/netns/" + ns, ec);
}

bool pidAlive(const std::string& pid) {
  return ::kill(static_cast<pid_t>(std::stol(pid)), 0) == 0 || errno == EPERM;
}

// What tests killed before their clean-up left: their namespaces, hosts
// files and bridges.
void removeStaleHosts() {
  std::smatch m;
  for (const std::string& line : lines(runCommand("ip netns list").out)) {
    const std::string ns = line.substr(0, line.find(' '));
    if (!std::regex_match(ns, m, kNamespace) || pidAlive(m[1].str())) continue;
    removeNamespace(ns);
  }
  for (const std::string& name : lines(runCommand("ls /sys/class/net").out)) {
    if (std::regex_match(name, m, kBridge) && !pidAlive(m[1].str())) {
      runCommand("ip link del " + name);
    }
  }
}

}  // namespace

std::string NetworkHosts::unavailable() {
  if (::geteuid() != 0) return "network hosts need root (ip netns)";
  for (const char* tool : {"ip", "tc", "unshare", "nsenter"}) {
    if (runCommand(fmt::format("command -v {}", tool)).exitCode != 0) {
      return fmt::format("network hosts need '{}' (iproute2, util-linux: scripts/install-deps)",
                         tool);
    }
  }
  const std::string probe = fmt::format("drprobe{}", ::getpid());
  CommandResult r = runCommand(fmt::format("ip netns add {0} && ip netns del {0}", probe));
  if (r.exitCode != 0) return "this kernel makes no network namespace: " + std::string(trim(r.err));
  return "";
}

std::string NetworkHosts::name(int host) { return fmt::format("nid{:03}", host); }
std::string NetworkHosts::managementAddress(int host) { return fmt::format("10.10.0.{}", host); }
std::string NetworkHosts::fastAddress(int host) { return fmt::format("10.20.0.{}", host); }

std::string NetworkHosts::ns(int host) const { return fmt::format("dr{}-{}", id_, host); }
std::string NetworkHosts::rootEnd(int host, char network) const {
  return fmt::format("d{}{}{}", id_, network, host);
}
std::string NetworkHosts::bridge(const std::string& which) const {
  return fmt::format("dr{}{}", id_, which);
}

NetworkHosts::NetworkHosts(int count) : count_(count), id_(nextId()) {
  if (count < 1 || count > 9) throw std::runtime_error("network hosts: 1 to 9 hosts");
  removeStaleHosts();
  try {
    for (const char* b : {"M", "F", "PM", "PF"}) {
      run(fmt::format("ip link add {0} type bridge && ip link set {0} up", bridge(b)));
    }
    hostsFiles_.resize(static_cast<size_t>(count) + 1);
    for (int host = 1; host <= count; ++host) makeHost(host);
  } catch (...) {
    removeAll();
    throw;
  }
}

NetworkHosts::~NetworkHosts() { removeAll(); }

void NetworkHosts::removeAll() {
  for (int host = 1; host <= count_; ++host) {
    removeNamespace(ns(host));
  }
  for (const char* b : {"M", "F", "PM", "PF"}) {
    runCommand("ip link del " + bridge(b) + " 2>/dev/null");
  }
}

// Host `host`: its namespace, its two links (the bridge's end up, the
// host's named and addressed) and its hosts file.
void NetworkHosts::makeHost(int host) {
  const std::string n = ns(host);
  run("ip netns add " + n + " && ip -n " + n + " link set lo up");
  const struct {
    char network;
    const char* bridge;
    const char* interface;
    std::string address;
  } links[] = {{'m', "M", "eth0", managementAddress(host)}, {'f', "F", "hsn0", fastAddress(host)}};
  for (const auto& l : links) {
    const std::string end = rootEnd(host, l.network);
    run(fmt::format(
        "ip link add {0} type veth peer name {1} netns {2} && ip link set {0} master {3} && "
        "ip link set {0} up && ip -n {2} addr add {4}/24 dev {1} && ip -n {2} link set {1} up",
        end, l.interface, n, bridge(l.bridge), l.address));
  }
  auto& file = hostsFiles_[static_cast<size_t>(host)];
  file = {{"localhost", "127.0.0.1"}};
  for (int other = 1; other <= count_; ++other) {
    file.emplace_back(name(other), managementAddress(other));
    file.emplace_back(name(other) + "-hsn0", fastAddress(other));
  }
  writeHostsFile(host);
}

void NetworkHosts::writeHostsFile(int host) const {
  std::filesystem::create_directories("/etc/netns/" + ns(host));
  std::ofstream out("/etc/netns/" + ns(host) + "/hosts");
  for (const auto& [hostName, address] : hostsFiles_[static_cast<size_t>(host)]) {
    out << address << " " << hostName << "\n";
  }
  if (!out) throw std::runtime_error("network hosts: cannot write the hosts file of " + ns(host));
}

void NetworkHosts::resolveOn(int host, const std::string& hostName, const std::string& address) {
  for (auto& entry : hostsFiles_[static_cast<size_t>(host)]) {
    if (entry.first == hostName) entry.second = address;
  }
  writeHostsFile(host);
}

// Not `ip netns exec`, which mounts a sysfs of the namespace's own over
// /sys and so hides /sys/fs/cgroup, without which slurmd does not start:
// the host's network namespace, and a mount namespace of its own in which
// its hosts file is /etc/hosts.
std::string NetworkHosts::runsOn(int host) const {
  return fmt::format(
      "nsenter --net=/run/netns/{} unshare --mount --uts -- sh -c {} sh", ns(host),
      quote(fmt::format("mount --bind /etc/netns/{}/hosts /etc/hosts && hostname {} && exec \"$@\"",
                        ns(host), name(host))));
}

std::string NetworkHosts::on(int host, const std::string& command) const {
  return runsOn(host) + " sh -c " + quote(command);
}

std::string NetworkHosts::environment() const {
  std::string words = fmt::format("NETWORK_HOSTS={}", count_);
  for (int host = 1; host <= count_; ++host) {
    words += fmt::format(" NETWORK_HOST_{}={}", host, quote(runsOn(host)));
  }
  return words;
}

std::string NetworkHosts::reachFromHere() {
  const std::string address = managementAddress(254);
  run(fmt::format("ip addr add {}/24 dev {}", address, bridge("M")));
  return address;
}

void NetworkHosts::capFastLink(int host, int megabitsPerSecond) {
  const std::string tbf =
      fmt::format("root tbf rate {}mbit burst 256kb latency 100ms", megabitsPerSecond);
  run(fmt::format("tc qdisc replace dev {} {}", rootEnd(host, 'f'), tbf));
  run(fmt::format("ip netns exec {} tc qdisc replace dev hsn0 {}", ns(host), tbf));
}

void NetworkHosts::cut(int host) {
  for (char network : {'m', 'f'}) run(fmt::format("ip link set {} down", rootEnd(host, network)));
}

void NetworkHosts::partition(const std::vector<int>& hosts) {
  for (int host : hosts) {
    run(fmt::format("ip link set {} master {}", rootEnd(host, 'm'), bridge("PM")));
    run(fmt::format("ip link set {} master {}", rootEnd(host, 'f'), bridge("PF")));
  }
}

void NetworkHosts::heal() {
  for (int host = 1; host <= count_; ++host) {
    run(fmt::format("ip link set {} master {} up", rootEnd(host, 'm'), bridge("M")));
    run(fmt::format("ip link set {} master {} up", rootEnd(host, 'f'), bridge("F")));
  }
}

std::uint64_t NetworkHosts::sentBytes(int host, const std::string& interface) const {
  CommandResult r = runCommand(fmt::format(
      "ip netns exec {} cat /sys/class/net/{}/statistics/tx_bytes", ns(host), interface));
  if (r.exitCode != 0) {
    throw std::runtime_error(fmt::format("network hosts: no counters of {} on {}: {}", interface,
                                         name(host), trim(r.err)));
  }
  return std::stoull(r.out);
}

}  // namespace distrun::testing
