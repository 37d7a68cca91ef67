#include "distrun/comm/gloo/peer_directory.h"

#include <arpa/inet.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
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

// The inodes of this process's sockets, from the /proc/self/fd links.
std::set<std::string> socketInodes() {
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  return inodes;
}

// "0100007F:D71B" (tcp) or 32 hex digits ":port" (tcp6) -> "[127.0.0.1]:55067"
// and the same with the port's two bytes swapped: Gloo 0.5's Address::str()
// prints the port in network byte order, so its messages name that form.
std::vector<std::string> formatProcAddress(const std::string& hex, bool v6) {
  size_t colon = hex.find(':');
  if (colon == std::string::npos) return {};
  unsigned char bytes[16] = {};
  const size_t words = v6 ? 4 : 1;
  for (size_t w = 0; w < words; ++w) {
    uint32_t word = static_cast<uint32_t>(std::stoul(hex.substr(w * 8, 8), nullptr, 16));
    std::memcpy(bytes + w * 4, &word, 4);  // /proc prints host-order words
  }
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(v6 ? AF_INET6 : AF_INET, bytes, text, sizeof(text));
  const auto port = static_cast<uint16_t>(std::stoul(hex.substr(colon + 1), nullptr, 16));
  const auto swapped = static_cast<uint16_t>((port >> 8) | (port << 8));
  return {fmt::format("[{}]:{}", text, port), fmt::format("[{}]:{}", text, swapped)};
}

}  // namespace

std::vector<std::string> PeerDirectory::localSocketAddresses() {
  const std::set<std::string> inodes = socketInodes();
  std::vector<std::string> addresses;
  for (bool v6 : {false, true}) {
    std::ifstream table(v6 ? "/proc/self/net/tcp6" : "/proc/self/net/tcp");
    std::string line;
    std::getline(table, line);  // header
    while (std::getline(table, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (!inodes.count(inode)) continue;
      for (std::string& a : formatProcAddress(local, v6)) addresses.push_back(std::move(a));
    }
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

void PeerDirectory::publish(rdzv::StoreClient& store, const std::string& prefix, int rank,
                            const Peer& self) {
  store.set(peerKey(prefix, rank), encode(self));
}

void PeerDirectory::load(rdzv::StoreClient& store, const std::string& prefix, int rank, int size,
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
