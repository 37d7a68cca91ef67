#include "distrun/rdzv/socket.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

namespace distrun::rdzv {
namespace {

// This machine's first IPv4 address that is not loopback, or "".
std::string firstNonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i && found.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    found = text;
  }
  ::freeifaddrs(list);
  return found;
}

TEST(StoreBindAddressTest, OneNodeBindsLoopback) {
  EXPECT_EQ(storeBindAddress("127.0.0.1", false), "127.0.0.1");
  EXPECT_EQ(storeBindAddress("localhost", false), "127.0.0.1");
}

// Several nodes never meet on a loopback address: another node reaches this
// one by a name that resolves here to 127.0.1.1 (Debian) but there to the
// node's address.
TEST(StoreBindAddressTest, SeveralNodesNeverBindLoopback) {
  EXPECT_EQ(storeBindAddress("127.0.0.1", true), "0.0.0.0");
  EXPECT_EQ(storeBindAddress("127.0.1.1", true), "0.0.0.0");
}

TEST(StoreBindAddressTest, AnAddressOfThisMachineIsBound) {
  const std::string own = firstNonLoopbackAddress();
  if (own.empty()) GTEST_SKIP() << "this machine has no IPv4 address but loopback";
  EXPECT_EQ(storeBindAddress(own, true), own);
  EXPECT_EQ(storeBindAddress(own, false), own);
}

// An address that is not this machine's (TEST-NET-3, RFC 5737), or a name
// that does not resolve: every address, as before.
TEST(StoreBindAddressTest, AnAddressElsewhereBindsEveryAddress) {
  EXPECT_EQ(storeBindAddress("203.0.113.9", true), "0.0.0.0");
  EXPECT_EQ(storeBindAddress("no-such-host.invalid", true), "0.0.0.0");
}

TEST(TryConnectTcpTest, ARefusedConnectIsReportedNotRetried) {
  int port = 0;
  UniqueFd listener(listenTcp("127.0.0.1", 0, &port));
  listener.reset();  // nothing listens there any more
  ConnectAttempt attempt =
      tryConnectTcp("127.0.0.1", port, Clock::now() + std::chrono::seconds(30));
  EXPECT_FALSE(attempt.fd.valid());
  EXPECT_EQ(attempt.error, ECONNREFUSED);
}

TEST(SetKeepAliveTest, ADescriptorThatIsNotASocketIsASystemError) {
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  UniqueFd read(ends[0]), write(ends[1]);
  try {
    setKeepAlive(read.get(), "node1:29400");
    FAIL() << "keepalive was set on a pipe";
  } catch (const SystemError& e) {
    EXPECT_EQ(std::string(e.what()),
              "setsockopt(node1:29400) failed: Socket operation on non-socket");
    EXPECT_EQ(e.exitCode(), ExitCode::kSystem);
  }
}

}  // namespace
}  // namespace distrun::rdzv
