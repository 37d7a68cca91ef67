#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <thread>

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

class StoreTest : public ::testing::Test {
 protected:
  StoreServer server{"127.0.0.1", 0, "secret"};
  StoreClient client() { return StoreClient("127.0.0.1", server.port(), "secret", kGenerous); }
};

TEST_F(StoreTest, SetGetAddTryGet) {
  StoreClient c = client();
  c.set("a", "1");
  EXPECT_EQ(c.get("a", kGenerous), "1");
  EXPECT_EQ(c.tryGet("a"), "1");
  EXPECT_FALSE(c.tryGet("b").has_value());
  EXPECT_EQ(c.add("n", 2), 2);
  EXPECT_EQ(c.add("n", -5), -3);
}

// Two jobs on one store (one endpoint, one token, each its own --rdzv-id):
// each sees its own keys only, and a client without a space sees neither.
TEST_F(StoreTest, KeySpacesKeepJobsApart) {
  const int port = server.port();
  StoreClient jobA("127.0.0.1", port, "secret", kGenerous, "jobA");
  StoreClient jobB("127.0.0.1", port, "secret", kGenerous, "jobB");
  jobA.set("r0/node/0", "a");
  jobB.set("r0/node/0", "b");
  EXPECT_EQ(jobA.add("r0/count", 1), 1);
  EXPECT_EQ(jobB.add("r0/count", 1), 1);
  EXPECT_EQ(jobB.compareSet("r0/closed", "", "b"), "b");
  EXPECT_EQ(jobA.compareSet("r0/closed", "", "a"), "a");
  StoreClient againA("127.0.0.1", port, "secret", kGenerous, "jobA");
  EXPECT_EQ(againA.tryGet("r0/node/0"), "a");
  EXPECT_EQ(againA.add("r0/count", 1), 2);
  EXPECT_EQ(jobB.get("r0/node/0", kGenerous), "b");
  EXPECT_FALSE(client().tryGet("r0/node/0").has_value());
  EXPECT_FALSE(jobA.get("only-b", 100ms).has_value());
}

TEST_F(StoreTest, GetWaitsForAnotherClientsSet) {
  StoreClient waiter = client();
  std::thread setter([this] {
    std::this_thread::sleep_for(50ms);
    client().set("late", "value");
  });
  EXPECT_EQ(waiter.get("late", kGenerous), "value");
  setter.join();
}

TEST_F(StoreTest, GetTimesOutAndTheClientStaysUsable) {
  StoreClient c = client();
  EXPECT_FALSE(c.get("never", 100ms).has_value());
  c.set("after", "ok");
  EXPECT_EQ(c.get("after", kGenerous), "ok");
}

TEST_F(StoreTest, WrongTokenIsRefused) {
  try {
    StoreClient("127.0.0.1", server.port(), "guess", kGenerous);
    FAIL();
  } catch (const RendezvousError& e) {
    EXPECT_EQ(std::string(e.what()),
              "the rendezvous store at 127.0.0.1:" + std::to_string(server.port()) +
                  " refused this agent's token: every agent of a job needs the "
                  "same DISTRUN_TOKEN (when unset, it is derived from the user's distrun "
                  "secret file, which every node must share; where they do not, export the "
                  "same DISTRUN_TOKEN on every node); or the store there is another job's, "
                  "with its own token: give this job its own --rdzv-endpoint port");
  }
  EXPECT_EQ(server.rejectedConnections(), 1u);
}

// Sends raw bytes on a fresh connection and waits until the server closes it.
void sendGarbage(int port, const std::string& bytes) {
  UniqueFd fd(connectTcp("127.0.0.1", port, Clock::now() + kGenerous));
  ::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
  char sink[64];
  while (::read(fd.get(), sink, sizeof(sink)) > 0) {
  }
}

TEST_F(StoreTest, HostileBytesNeverStopTheStore) {
  StoreClient good = client();
  good.set("k", "v");
  std::string setBeforeHello;
  encodeFrame(Frame{Op::kSet, {"k", "evil"}}, setBeforeHello);
  std::string replyOpcode;
  encodeFrame(Frame{Op::kValue, {"x"}}, replyOpcode);
  const std::string cases[] = {
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n",               // an HTTP probe
      std::string("\xff\xff\xff\xff", 4),                // an absurd length
      std::string(8192, 'A'),                            // a flood before the hello
      setBeforeHello,                                    // a request before the hello
      replyOpcode,                                       // a reply opcode from a client
      std::string("\x05\0\0\0\x01\xff\xff\xff\xff", 9),  // field past the end
  };
  for (const std::string& bytes : cases) sendGarbage(server.port(), bytes);
  EXPECT_GE(server.rejectedConnections(), 6u);
  EXPECT_EQ(good.get("k", kGenerous), "v");
  EXPECT_EQ(client().tryGet("k"), "v");
}

// fuzz/regressions/store_frames: an add past the range of a long long was
// signed overflow (undefined behaviour); the store now closes that client's
// connection, as for any malformed request, and keeps the value it had.
TEST_F(StoreTest, AnAddThatWouldOverflowClosesOnlyThatConnection) {
  client().set("n", "9223372036854775807");
  EXPECT_THROW(client().add("n", 1), RendezvousError);
  client().set("m", "-9223372036854775808");
  EXPECT_THROW(client().add("m", -1), RendezvousError);
  EXPECT_EQ(client().tryGet("n"), "9223372036854775807");
  EXPECT_EQ(client().add("m", 1), -9223372036854775807LL);
}

TEST_F(StoreTest, ADeltaOutsideALongLongClosesTheConnection) {
  std::string add;
  encodeFrame(Frame{Op::kHello, {"secret"}}, add);
  encodeFrame(Frame{Op::kAdd, {"n", "99999999999999999999"}}, add);
  sendGarbage(server.port(), add);
  EXPECT_EQ(server.rejectedConnections(), 1u);
  EXPECT_FALSE(client().tryGet("n").has_value());
}

TEST_F(StoreTest, ManyClientsAtOnce) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([this, i] {
      StoreClient c = client();
      c.add("count", 1);
      c.set("k" + std::to_string(i), "v");
      c.get("k" + std::to_string((i + 1) % 64), kGenerous);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(client().add("count", 0), 64);
}

TEST(StoreClientTest, NoStoreIsATimeoutNamingTheAddress) {
  int port = 0;
  UniqueFd listener(listenTcp("127.0.0.1", 0, &port));
  listener.reset();  // a port that was free a moment ago: nobody listens
  try {
    StoreClient("127.0.0.1", port, "t", 200ms);
    FAIL();
  } catch (const TimeoutError& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith("cannot reach the rendezvous store at 127.0.0.1:" +
                                                std::to_string(port) + ": Connection refused"));
  }
}

// The message and exit code of the error `call` throws.
std::pair<std::string, ExitCode> errorOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return {e.what(), e.exitCode()};
  }
  return {"no error", ExitCode::kSuccess};
}

// A store whose clients went on writing after it stopped: each call is an
// error naming the store, never a SIGPIPE that kills the process (they
// send with MSG_NOSIGNAL; this test runs with SIGPIPE's default action).
TEST_F(StoreTest, WritingToAStoppedStoreIsAnErrorNamingItNotASigpipe) {
  struct sigaction previous {};
  struct sigaction byDefault {};
  byDefault.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &byDefault, &previous);
  StoreClient c = client();
  server.stop();
  const std::string lost =
      "lost the rendezvous store at 127.0.0.1:" + std::to_string(server.port()) + ": ";
  for (int i = 0; i < 3; ++i) {  // the later writes meet a reset connection
    const auto [message, code] = errorOf([&] { c.set("k", "v"); });
    EXPECT_THAT(message, ::testing::StartsWith(lost));
    EXPECT_EQ(code, ExitCode::kRendezvous);
  }
  ::sigaction(SIGPIPE, &previous, nullptr);
}

// epoll_wait as the store calls it, failing with `err` once `armed`.
EpollWait failingWhenArmed(std::atomic<bool>& armed, int err) {
  return [&armed, err](int fd, epoll_event* events, int max, int timeoutMs) {
    if (armed) {
      errno = err;
      return -1;
    }
    return ::epoll_wait(fd, events, max, timeoutMs);
  };
}

// The loop dies (its epoll_wait fails): a client waiting in get, and an
// idle one at its next call, get the cause at once; the owner's check()
// rethrows it; nobody can connect any more.
TEST(StoreServerFailureTest, ALoopFailureReachesEveryClientAndTheOwner) {
  std::atomic<bool> armed{false};
  StoreServer server("127.0.0.1", 0, "t", failingWhenArmed(armed, EINVAL));
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  StoreClient waiter("127.0.0.1", server.port(), "t", kGenerous);
  StoreClient idle("127.0.0.1", server.port(), "t", kGenerous);
  EXPECT_EQ(errorOf([&] { server.check(); }).second, ExitCode::kSuccess);
  armed = true;  // the loop's next epoll_wait fails (waiter's get wakes it, if nothing else)
  const std::string cause =
      "epoll_wait(rendezvous store at " + address + ") failed: Invalid argument";
  const std::pair<std::string, ExitCode> stopped = {
      "the rendezvous store at " + address + " stopped serving: " + cause, ExitCode::kRendezvous};
  EXPECT_EQ(errorOf([&] { waiter.get("never", kGenerous); }), stopped);
  EXPECT_EQ(errorOf([&] { idle.set("k", "v"); }), stopped);
  EXPECT_EQ(errorOf([&] { server.check(); }), std::make_pair(cause, ExitCode::kSystem));
  const auto [message, code] =
      errorOf([&] { StoreClient("127.0.0.1", server.port(), "t", 200ms); });
  EXPECT_THAT(message, ::testing::StartsWith("cannot reach the rendezvous store at " + address));
  EXPECT_EQ(code, ExitCode::kTimeout);
}

}  // namespace
}  // namespace distrun::rdzv
