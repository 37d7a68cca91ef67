#include "distrun/comm/gloo/peer_directory.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <filesystem>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <gloo/common/logging.h>
#include <gloo/transport/tcp/address.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::comm {

namespace {

std::string peerKey(const std::string& prefix, int rank) {
  return fmt::format("{}/peer/{}", prefix, rank);
}

// "[ip]:port" of an IPv4 or IPv6 socket address, and the same with the port's
// bytes swapped (Gloo 0.5 prints ports in network byte order, so its
// messages name that form); nothing for other families.
std::vector<std::string> formatSocketAddress(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
    port = ntohs(in.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
    port = ntohs(in6.sin6_port);
  } else {
    return {};
  }
  const auto swapped = static_cast<uint16_t>((port >> 8) | (port << 8));
  return {fmt::format("[{}]:{}", text, port), fmt::format("[{}]:{}", text, swapped)};
}

// The local address of descriptor `fd` if it is a TCP socket (a stream
// socket of IPv4 or IPv6), else nothing.
std::vector<std::string> tcpAddressOf(int fd) {
  int type = 0;
  socklen_t typeSize = sizeof(type);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &typeSize) != 0 || type != SOCK_STREAM) {
    return {};
  }
  sockaddr_storage address{};
  socklen_t addressSize = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &addressSize) != 0) return {};
  return formatSocketAddress(address);
}

}  // namespace

// Asks each descriptor of /proc/self/fd rather than reading /proc/net/tcp,
// which lists every socket of the network namespace and costs milliseconds
// (the kernel walks its whole table of connections) on a busy node.
std::vector<std::string> PeerDirectory::localSocketAddresses() {
  std::vector<std::string> addresses;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string name = entry.path().filename().string();
    int fd = -1;
    const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), fd);
    if (error != std::errc() || end != name.data() + name.size()) continue;
    for (std::string& a : tcpAddressOf(fd)) addresses.push_back(std::move(a));
  }
  return addresses;
}

std::vector<std::string> PeerDirectory::advertisedAddresses(const std::vector<char>& blob,
                                                            int pairs) {
  if (pairs <= 0 || blob.empty() || blob.size() % static_cast<size_t>(pairs) != 0) return {};
  const size_t each = blob.size() / static_cast<size_t>(pairs);
  std::vector<std::string> addresses;
  try {
    for (size_t at = 0; at < blob.size(); at += each) {
      std::vector<char> record(blob.begin() + static_cast<long>(at),
                               blob.begin() + static_cast<long>(at + each));
      addresses.push_back(gloo::transport::tcp::Address(record).str());
    }
  } catch (const gloo::EnforceNotMet&) {
    return {};  // another Gloo's record size: name what /proc shows
  }
  return addresses;
}

std::string PeerDirectory::encode(const Peer& peer) {
  std::string text = fmt::format("{} {}", peer.host, peer.pid);
  for (const std::string& a : peer.addresses) text += " " + a;
  return text;
}

PeerDirectory::Peer PeerDirectory::decode(const std::string& text) {
  std::istringstream in(text);
  Peer peer;
  in >> peer.host >> peer.pid;
  for (std::string a; in >> a;) peer.addresses.push_back(a);
  return peer;
}

void PeerDirectory::publish(rdzv::Store& store, const std::string& prefix, int rank,
                            const Peer& self) {
  store.set(peerKey(prefix, rank), encode(self));
}

void PeerDirectory::load(rdzv::Store& store, const std::string& prefix, int rank, int size,
                         std::chrono::milliseconds timeout) {
  peers_.assign(static_cast<size_t>(size), Peer{});
  for (int r = 0; r < size; ++r) {
    std::optional<std::string> text = store.get(peerKey(prefix, r), timeout);
    if (!text) {
      throw TimeoutError(
          fmt::format("communicator: rank {} did not publish its address within {} s", r,
                      std::chrono::duration<double>(timeout).count()));
    }
    Peer& peer = peers_[static_cast<size_t>(r)];
    peer = decode(*text);
    if (r == rank) continue;
    for (const std::string& a : peer.addresses) byAddress_[a] = r;
  }
}

std::optional<int> PeerDirectory::findIn(const std::string& message) const {
  static const std::regex kAddress(R"(\[[^\]\s]+\]:\d+)");
  for (auto it = std::sregex_iterator(message.begin(), message.end(), kAddress);
       it != std::sregex_iterator(); ++it) {
    auto found = byAddress_.find(it->str());
    if (found != byAddress_.end()) return found->second;
  }
  return std::nullopt;
}

std::vector<int> PeerDirectory::ranksOnHost(const std::string& host) const {
  std::vector<int> ranks;
  for (size_t r = 0; r < peers_.size(); ++r) {
    if (peers_[r].host == host) ranks.push_back(static_cast<int>(r));
  }
  return ranks;
}

std::string PeerDirectory::describe(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= peers_.size()) {
    return fmt::format("rank {}", rank);
  }
  const Peer& p = peers_[static_cast<size_t>(rank)];
  return fmt::format("rank {} (host {}, pid {})", rank, p.host, p.pid);
}

}  // namespace distrun::comm
