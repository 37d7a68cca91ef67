#include "distrun/comm/gloo/peer_directory.h"

#include <gtest/gtest.h>

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
  rdzv::StoreServer server("127.0.0.1", 0, "t");
  rdzv::StoreClient client("127.0.0.1", server.port(), "t", std::chrono::seconds(5));
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

TEST(PeerDirectoryTest, ListsThisProcessSockets) {
  rdzv::StoreServer server("127.0.0.1", 0, "t");
  auto addresses = PeerDirectory::localSocketAddresses();
  EXPECT_NE(std::find(addresses.begin(), addresses.end(),
                      "[127.0.0.1]:" + std::to_string(server.port())),
            addresses.end());
}

}  // namespace
}  // namespace distrun::comm
