// A client's last will (wire.h, kWill) and the keepalive on both ends of a
// store connection, in one process; store_process_test.cc kills a client
// process.
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <memory>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"
#include "distrun/rdzv/store_testing.h"

namespace distrun::rdzv {
namespace {

using namespace std::chrono_literals;
using store_testing::kGenerous;
constexpr const char* kDeath = "lost\nnode 2";

class StoreWillTest : public ::testing::Test {
 protected:
  std::unique_ptr<StoreClient> client() {
    return std::make_unique<StoreClient>("127.0.0.1", server.port(), "secret", kGenerous);
  }
  // Appends to round 0's event sequence as launch/publishEvent does.
  void publish(StoreClient& c, const std::string& event) {
    const long long index = c.add("r0/events", 1) - 1;
    c.set("r0/event/" + std::to_string(index), event);
  }
  // Waits until a will on the sentinel's sequence, left on a connection
  // closed after `earlier` ones, has fired: the store has seen the earlier
  // connections close.
  void awaitClosesBeforeASentinel() {
    client()->setWill("sentinel/n", "sentinel/", "gone");
    EXPECT_EQ(watcher->get("sentinel/0", kGenerous), "gone");
  }

  StoreServer server{"127.0.0.1", 0, "secret"};
  std::unique_ptr<StoreClient> watcher = client();
};

TEST_F(StoreWillTest, AConnectionClosedWithItsWillSetAppendsItToTheEventSequence) {
  publish(*watcher, "failure\n{}");
  auto agent = client();
  agent->setWill("r0/events", "r0/event/", kDeath);
  std::optional<std::string> seen;
  std::thread waiter([&] { seen = client()->get("r0/event/1", kGenerous); });
  agent.reset();  // EOF, as when its process dies
  waiter.join();
  EXPECT_EQ(seen, kDeath);
  EXPECT_EQ(watcher->tryGet("r0/events"), "2");
  publish(*watcher, "complete\n");
  EXPECT_EQ(watcher->tryGet("r0/event/2"), "complete\n");
}

// A will left in a key space is carried out in that space: the job's own
// event sequence, not another's on the same store.
// A will with a second value: that one when the client's kernel closed the
// connection (its process is gone for sure); the first is for a
// connection that went silent (a keepalive time-out), as a host cut off.
TEST_F(StoreWillTest, AClosedConnectionsWillAppendsItsClosedValue) {
  auto agent = client();
  agent->setWill("r0/events", "r0/event/", "node_lost\nnode 2", "node_died\nnode 2");
  agent.reset();  // EOF, as when its process dies
  EXPECT_EQ(watcher->get("r0/event/0", kGenerous), "node_died\nnode 2");
}

TEST_F(StoreWillTest, AWillFiresInItsClientsKeySpace) {
  const int port = server.port();
  auto agent = std::make_unique<StoreClient>("127.0.0.1", port, "secret", kGenerous, "jobA");
  agent->setWill("r0/events", "r0/event/", kDeath);
  StoreClient sameJob("127.0.0.1", port, "secret", kGenerous, "jobA");
  agent.reset();
  EXPECT_EQ(sameJob.get("r0/event/0", kGenerous), kDeath);
  EXPECT_FALSE(watcher->tryGet("r0/events").has_value());
  StoreClient otherJob("127.0.0.1", port, "secret", kGenerous, "jobB");
  EXPECT_FALSE(otherJob.tryGet("r0/events").has_value());
}

TEST_F(StoreWillTest, AClearedWillAppendsNothing) {
  auto agent = client();
  agent->setWill("r0/events", "r0/event/", kDeath);
  agent->clearWill();
  agent->set("still", "usable");
  agent.reset();
  awaitClosesBeforeASentinel();
  EXPECT_FALSE(watcher->tryGet("r0/events").has_value());
}

TEST_F(StoreWillTest, CloseIsACleanLeave) {
  auto agent = client();
  agent->setWill("r0/events", "r0/event/", kDeath);
  agent->close();
  agent->close();
  awaitClosesBeforeASentinel();
  EXPECT_FALSE(watcher->tryGet("r0/events").has_value());
  try {
    agent->set("k", "v");
    FAIL() << "a closed client was used";
  } catch (const RendezvousError& e) {
    EXPECT_EQ(std::string(e.what()), "no connection to the rendezvous store at 127.0.0.1:" +
                                         std::to_string(server.port()));
  }
}

TEST_F(StoreWillTest, ALaterWillReplacesTheFirst) {
  auto agent = client();
  agent->setWill("first/n", "first/", "one");
  agent->setWill("r0/events", "r0/event/", kDeath);
  agent.reset();
  EXPECT_EQ(watcher->get("r0/event/0", kGenerous), kDeath);
  EXPECT_FALSE(watcher->tryGet("first/n").has_value());
}

TEST_F(StoreWillTest, AGetThatTimesOutOnTheWillsConnectionSaysTheWillFired) {
  auto agent = client();
  agent->setWill("r0/events", "r0/event/", kDeath);
  try {
    agent->get("never", 50ms);
    FAIL() << "the get did not time out";
  } catch (const RendezvousError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no value for 'never' from the rendezvous store at 127.0.0.1:" +
                  std::to_string(server.port()) +
                  " in time, on the connection that holds this client's will: the connection "
                  "is given up, so the will fired");
    EXPECT_EQ(e.exitCode(), ExitCode::kRendezvous);
  }
  EXPECT_EQ(watcher->get("r0/event/0", kGenerous), kDeath);
}

TEST_F(StoreWillTest, AnEmptyCounterKeyIsABug) {
  EXPECT_THROW(watcher->setWill("", "p/", "v"), EnforceError);
}

TEST(StoreWillLimitsTest, APrefixOverTheKeyLimitClosesTheConnection) {
  StoreLimits limits;
  limits.maxKeyBytes = 8;
  StoreServer server("127.0.0.1", 0, "secret", nullptr, limits);
  StoreClient agent("127.0.0.1", server.port(), "secret", kGenerous);
  EXPECT_THROW(agent.setWill("n", "123456789", "v"), RendezvousError);
  EXPECT_EQ(server.rejectedConnections(), 1u);
  StoreClient other("127.0.0.1", server.port(), "secret", kGenerous);
  EXPECT_FALSE(other.tryGet("n").has_value());
}

// This process's TCP sockets whose local (or, with `peer`, remote) port is
// `port`, connected ones only.
std::vector<int> connectedSockets(int port, bool peer) {
  std::vector<int> found;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc/self/fd"), ::closedir);
  while (dirent* entry = ::readdir(dir.get())) {
    const int fd = std::atoi(entry->d_name);
    sockaddr_in local{}, remote{};
    socklen_t a = sizeof(local), b = sizeof(remote);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &a) != 0 ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &b) != 0 ||
        local.sin_family != AF_INET) {
      continue;
    }
    if (ntohs(peer ? remote.sin_port : local.sin_port) == port) found.push_back(fd);
  }
  return found;
}

int option(int fd, int level, int name) {
  int value = -1;
  socklen_t size = sizeof(value);
  EXPECT_EQ(::getsockopt(fd, level, name, &value, &size), 0);
  return value;
}

void expectKeepAlive(int fd) {
  EXPECT_EQ(option(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(option(fd, IPPROTO_TCP, TCP_KEEPIDLE), kKeepAliveIdleSeconds);
  EXPECT_EQ(option(fd, IPPROTO_TCP, TCP_KEEPINTVL), kKeepAliveIntervalSeconds);
  EXPECT_EQ(option(fd, IPPROTO_TCP, TCP_KEEPCNT), kKeepAliveProbes);
  EXPECT_EQ(option(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), kUserTimeoutMs);
}

TEST(StoreKeepAliveTest, BothEndsOfAStoreConnectionProbeTheirPeer) {
  StoreServer server("127.0.0.1", 0, "secret");
  StoreClient client("127.0.0.1", server.port(), "secret", kGenerous);
  const std::vector<int> accepted = connectedSockets(server.port(), false);
  const std::vector<int> clients = connectedSockets(server.port(), true);
  ASSERT_EQ(accepted.size(), 1u);
  ASSERT_EQ(clients.size(), 1u);
  expectKeepAlive(accepted[0]);
  expectKeepAlive(clients[0]);
}

}  // namespace
}  // namespace distrun::rdzv
