#include "distrun/comm/gloo/peer_directory.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <iostream>
#include <utility>

#include <gloo/transport/tcp/address.h>

#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/in_memory_store.h"
#include "distrun/rdzv/store_server.h"

namespace distrun::comm {
namespace {

TEST(PeerDirectoryTest, EncodesAndDecodes) {
  PeerDirectory::Peer p{"node7", 4711, {"[10.0.0.7]:41012", "[10.0.0.7]:41013"}};
  PeerDirectory::Peer q = PeerDirectory::decode(PeerDirectory::encode(p));
  EXPECT_EQ(q.host, "node7");
  EXPECT_EQ(q.pid, 4711);
  EXPECT_EQ(q.addresses, p.addresses);
}

TEST(PeerDirectoryTest, NamesTheRankBehindAnAddressInAnError) {
  rdzv::InMemoryStore client;
  // Rank 1 is "us": its own sockets never name a peer.
  PeerDirectory::publish(client, "p", 0, {"a", 10, {"[127.0.0.1]:5000", "[127.0.0.1]:5001"}});
  PeerDirectory::publish(client, "p", 1, {"b", 11, {"[127.0.0.1]:7000", "[127.0.0.1]:6001"}});
  PeerDirectory::publish(client, "p", 2, {"c", 12, {"[127.0.0.1]:7001", "[::1]:7002"}});
  PeerDirectory directory;
  directory.load(client, "p", 1, 3, std::chrono::seconds(5));
  EXPECT_EQ(directory.findIn("Connection closed by peer [127.0.0.1]:7001"), 2);
  EXPECT_EQ(directory.findIn("Read error [127.0.0.1]:5000: Connection reset by peer"), 0);
  EXPECT_EQ(directory.findIn("Read error [::1]:7002: Broken pipe"), 2);
  EXPECT_EQ(directory.findIn("Read error [127.0.0.1]:7000"), std::nullopt);  // our own
  EXPECT_EQ(directory.describe(2), "rank 2 (host c, pid 12)");
}

bool lists(const std::vector<std::string>& addresses, const std::string& address) {
  return std::find(addresses.begin(), addresses.end(), address) != addresses.end();
}

TEST(PeerDirectoryTest, ListsThisProcessSockets) {
  rdzv::StoreServer server("127.0.0.1", 0, "t");
  EXPECT_TRUE(
      lists(PeerDirectory::localSocketAddresses(), "[127.0.0.1]:" + std::to_string(server.port())));
}

// A socket of `family` and `type` bound to the loopback address at a port the
// kernel picks, and that port (0 when this machine has no such loopback).
std::pair<UniqueFd, uint16_t> boundSocket(int family, int type) {
  UniqueFd fd(::socket(family, type, 0));
  sockaddr_storage address{};
  socklen_t size = 0;
  if (family == AF_INET) {
    auto& in = reinterpret_cast<sockaddr_in&>(address);
    in.sin_family = AF_INET;
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    size = sizeof(in);
  } else {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(address);
    in6.sin6_family = AF_INET6;
    in6.sin6_addr = in6addr_loopback;
    size = sizeof(in6);
  }
  if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    return {std::move(fd), 0};
  }
  const uint16_t port = family == AF_INET ? reinterpret_cast<sockaddr_in&>(address).sin_port
                                          : reinterpret_cast<sockaddr_in6&>(address).sin6_port;
  return {std::move(fd), ntohs(port)};
}

// TCP sockets of IPv4 and IPv6, each port also byte-swapped as Gloo prints
// it; not a UDP socket, though it has an address of its own.
TEST(PeerDirectoryTest, ListsTcpSocketsOfBothFamiliesAndNotUdp) {
  auto [tcp4, port4] = boundSocket(AF_INET, SOCK_STREAM);
  auto [tcp6, port6] = boundSocket(AF_INET6, SOCK_STREAM);
  auto [udp, udpPort] = boundSocket(AF_INET, SOCK_DGRAM);
  const auto swapped = [](uint16_t port) {
    return static_cast<uint16_t>((port >> 8) | (port << 8));
  };
  ASSERT_NE(port4, 0);
  ASSERT_NE(udpPort, 0);
  const auto addresses = PeerDirectory::localSocketAddresses();
  EXPECT_TRUE(lists(addresses, "[127.0.0.1]:" + std::to_string(port4)));
  EXPECT_TRUE(lists(addresses, "[127.0.0.1]:" + std::to_string(swapped(port4))));
  EXPECT_FALSE(lists(addresses, "[127.0.0.1]:" + std::to_string(udpPort)));
  if (port6 == 0) {
    std::cout << "no IPv6 loopback here: the IPv6 socket is not checked\n";
  } else {
    EXPECT_TRUE(lists(addresses, "[::1]:" + std::to_string(port6)));
  }
}

gloo::transport::tcp::Address loopback(uint16_t port) {
  sockaddr_storage ss{};
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  in->sin_family = AF_INET;
  in->sin_port = htons(port);
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return gloo::transport::tcp::Address(ss);
}

// connectFullMesh publishes one rank's pairs as their Address records back
// to back; a pair accepted early prints its peer's advertised address.
TEST(PeerDirectoryTest, ReadsTheAddressesGlooAdvertised) {
  std::vector<char> blob;
  for (uint16_t port : {uint16_t{41012}, uint16_t{41013}, uint16_t{41014}}) {
    std::vector<char> record = loopback(port).bytes();
    blob.insert(blob.end(), record.begin(), record.end());
  }
  std::vector<std::string> addresses = PeerDirectory::advertisedAddresses(blob, 3);
  ASSERT_EQ(addresses.size(), 3u);
  EXPECT_EQ(addresses[0], loopback(41012).str());
  EXPECT_EQ(addresses[2], loopback(41014).str());
  EXPECT_TRUE(PeerDirectory::advertisedAddresses(blob, 2).empty());  // not 2 records
  EXPECT_TRUE(PeerDirectory::advertisedAddresses({'x', 'y'}, 1).empty());
  EXPECT_TRUE(PeerDirectory::advertisedAddresses({}, 0).empty());
}

}  // namespace
}  // namespace distrun::comm
