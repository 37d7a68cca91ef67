// The store's limits (docs/security.md, "The store's limits"): strangers
// without the token cannot hold it, fill it, or lock the job's agents out.
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"
#include "distrun/rdzv/store_testing.h"
#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {
namespace {

using namespace std::chrono_literals;
using store_testing::kGenerous;

UniqueFd rawConnection(int port, const std::string& bytes = "") {
  UniqueFd fd(connectTcp("127.0.0.1", port, Clock::now() + kGenerous));
  if (!bytes.empty()) ::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
  return fd;
}

// Reads until the server closes the connection (what the test waits for:
// a connection the store never closes hangs the test, which ctest ends).
void waitUntilClosed(const UniqueFd& fd) {
  char sink[64];
  while (::read(fd.get(), sink, sizeof(sink)) > 0) {
  }
}

std::string hello(const std::string& token) {
  std::string bytes;
  encodeFrame(Frame{Op::kHello, {token}}, bytes);
  return bytes;
}

void expectServing(int port) {
  StoreClient c("127.0.0.1", port, "t", kGenerous);
  c.set("alive", "yes");
  EXPECT_EQ(c.get("alive", kGenerous), "yes");
}

TEST(StoreLimitsTest, DefaultsAreTheDocumentedOnes) {
  const StoreLimits limits;
  EXPECT_EQ(limits.maxPending, 8192u);
  EXPECT_EQ(limits.maxConnections, 65536u);
  EXPECT_EQ(limits.helloTimeout, 10s);
  EXPECT_EQ(limits.maxKeyBytes, 4096u);
  EXPECT_EQ(kMaxHelloBody, 4096u);
  EXPECT_EQ(kMaxFrameBody, 16u << 20);
}

// An idle connection, or one that sent half a hello, is closed once its
// time to send the hello has passed; a client that sent its hello stays.
TEST(StoreLimitsTest, NoHelloInTimeIsClosed) {
  StoreServer server("127.0.0.1", 0, "t", nullptr, StoreLimits{.helloTimeout = 50ms});
  StoreClient good("127.0.0.1", server.port(), "t", kGenerous);
  UniqueFd idle = rawConnection(server.port());
  UniqueFd half = rawConnection(server.port(), hello("t").substr(0, 6));
  waitUntilClosed(idle);
  waitUntilClosed(half);
  EXPECT_EQ(server.rejectedConnections(), 2u);
  good.set("k", "v");  // long past its own deadline
  EXPECT_EQ(good.get("k", kGenerous), "v");
}

// Over the cap of pending connections, the oldest pending one is closed:
// strangers who hold connections open cannot lock the job's agents out.
TEST(StoreLimitsTest, OverThePendingCapTheOldestIsClosed) {
  StoreServer server("127.0.0.1", 0, "t", nullptr, StoreLimits{.maxPending = 3});
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 5; ++i) idle.push_back(rawConnection(server.port()));
  waitUntilClosed(idle[0]);
  waitUntilClosed(idle[1]);
  expectServing(server.port());
  EXPECT_GE(server.rejectedConnections(), 2u);
}

// The drill's case with the default limits: 1,000 idle connections, then
// the job's agents connect and are served.
TEST(StoreLimitsTest, AThousandIdleConnectionsLeaveTheStoreServing) {
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_max < 2200) GTEST_SKIP() << "needs 2200 descriptors (client and server)";
  files.rlim_cur = std::max<rlim_t>(files.rlim_cur, 2200);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);
  StoreServer server("127.0.0.1", 0, "t");
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 1000; ++i) idle.push_back(rawConnection(server.port()));
  std::vector<std::thread> agents;
  for (int i = 0; i < 8; ++i) {
    agents.emplace_back([&server, i] {
      StoreClient c("127.0.0.1", server.port(), "t", kGenerous);
      c.add("joined", 1);
      c.set("agent" + std::to_string(i), "up");
    });
  }
  for (std::thread& t : agents) t.join();
  EXPECT_EQ(StoreClient("127.0.0.1", server.port(), "t", kGenerous).add("joined", 0), 8);
}

// The descriptor numbers this process has open.
std::vector<int> openDescriptors() {
  std::vector<int> fds;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    fds.push_back(std::stoi(entry.path().filename().string()));
  }
  return fds;  // includes the iterator's own, closed by now: one more free
}

// The RLIMIT_NOFILE under which exactly one descriptor number is free.
rlim_t limitWithOneFree() {
  std::vector<int> open = openDescriptors();
  std::sort(open.begin(), open.end());
  rlim_t limit = 0;
  size_t below = 0;  // open descriptors under `limit`
  while (limit - below != 1) {
    if (below < open.size() && static_cast<rlim_t>(open[below]) == limit) ++below;
    ++limit;
  }
  return limit;
}

// Out of descriptors with strangers' connections pending, the store closes
// the oldest of them and accepts the agent, instead of failing.
TEST(StoreLimitsTest, OutOfDescriptorsTheOldestPendingIsClosed) {
  StoreServer server("127.0.0.1", 0, "t");
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(rawConnection(server.port()));
  StoreClient early("127.0.0.1", server.port(), "t", kGenerous);
  early.set("k", "v");  // the store has accepted the idle ones before this one
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit tight = saved;
  tight.rlim_cur = limitWithOneFree();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  std::string error;
  try {
    StoreClient late("127.0.0.1", server.port(), "t", kGenerous);  // takes the last number
    late.set("late", "in");
  } catch (const std::exception& e) {
    error = e.what();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(error, "");
  waitUntilClosed(idle[0]);
  EXPECT_EQ(early.get("late", kGenerous), "in");
  EXPECT_NO_THROW(server.check());
}

TEST(StoreLimitsTest, OverTheConnectionCapANewConnectionIsClosed) {
  StoreServer server("127.0.0.1", 0, "t", nullptr, StoreLimits{.maxConnections = 2});
  StoreClient a("127.0.0.1", server.port(), "t", kGenerous);
  StoreClient b("127.0.0.1", server.port(), "t", kGenerous);
  UniqueFd third = rawConnection(server.port(), hello("t"));
  waitUntilClosed(third);
  EXPECT_EQ(server.rejectedConnections(), 1u);
  a.set("k", "v");
  EXPECT_EQ(b.get("k", kGenerous), "v");
}

// A key over the limit closes that client's connection, nothing more.
TEST(StoreLimitsTest, AKeyOverTheLimitClosesTheConnection) {
  StoreServer server("127.0.0.1", 0, "t", nullptr, StoreLimits{.maxKeyBytes = 8});
  StoreClient c("127.0.0.1", server.port(), "t", kGenerous);
  c.set("12345678", "fits");
  try {
    c.set("123456789", "v");
    FAIL();
  } catch (const RendezvousError& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith("lost the rendezvous store at 127.0.0.1:" +
                                                std::to_string(server.port())));
  }
  EXPECT_EQ(server.rejectedConnections(), 1u);
  expectServing(server.port());
}

// Before its hello a connection may send no more than kMaxHelloBody bytes
// (after it, a frame of up to kMaxFrameBody): a stranger cannot make the
// store buffer megabytes.
TEST(StoreLimitsTest, ALongFrameBeforeTheHelloIsClosed) {
  StoreServer server("127.0.0.1", 0, "t");
  UniqueFd big = rawConnection(server.port(), hello(std::string(kMaxHelloBody, 'x')));
  waitUntilClosed(big);
  EXPECT_EQ(server.rejectedConnections(), 1u);
  StoreClient c("127.0.0.1", server.port(), "t", kGenerous);
  c.set("k", std::string(kMaxHelloBody * 4, 'v'));  // after the hello: allowed
  EXPECT_EQ(c.get("k", kGenerous)->size(), kMaxHelloBody * 4);
}

}  // namespace
}  // namespace distrun::rdzv
