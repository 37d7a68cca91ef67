#include "distrun/rdzv/store_succession.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <exception>
#include <map>
#include <random>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_testing.h"
#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {
namespace {

using namespace std::chrono_literals;
using store_testing::kGenerous;
using ::testing::HasSubstr;
constexpr const char* kToken = "secret";

std::string addressOf(const StoreCandidate& c) { return c.host + ":" + std::to_string(c.port); }

// Agents on one machine: each holds a standby store; candidate i is agent i.
class Agents {
 public:
  explicit Agents(size_t n) {
    for (size_t i = 0; i < n; ++i) add();
  }
  void add() {
    standbys_.push_back(std::make_unique<StandbyStore>("127.0.0.1"));
    candidates_.push_back({"127.0.0.1", standbys_.back()->port()});
  }
  // The agent's process "dies": its standby socket closes (connects refused).
  void kill(size_t i) { standbys_[i].reset(); }
  const std::vector<StoreCandidate>& candidates() const { return candidates_; }
  StandbyStore& standby(size_t i) { return *standbys_[i]; }
  StoreLocation walk(size_t i, const StoreCandidate& lost, const SuccessionOptions& o = {}) {
    return findOrBecomeStore(candidates_, i, *standbys_[i], kToken, lost, o);
  }

  // Walks for each of `who` at once, one thread each, after its delay.
  std::vector<StoreLocation> walkAtOnce(const std::vector<size_t>& who, const StoreCandidate& lost,
                                        const std::vector<std::chrono::microseconds>& delays) {
    std::vector<StoreLocation> found(who.size());
    std::vector<std::exception_ptr> errors(who.size());
    std::vector<std::thread> threads;
    for (size_t k = 0; k < who.size(); ++k) {
      threads.emplace_back([&, k] {
        std::this_thread::sleep_for(delays.empty() ? 0us : delays[k]);
        try {
          found[k] = walk(who[k], lost);
        } catch (...) {
          errors[k] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    return found;
  }

 private:
  std::vector<std::unique_ptr<StandbyStore>> standbys_;
  std::vector<StoreCandidate> candidates_;
};

size_t serversAmong(const std::vector<StoreLocation>& found) {
  size_t n = 0;
  for (const auto& f : found) n += f.server ? 1 : 0;
  return n;
}

// A host that never answers: a listening socket whose accept queue (of one)
// is full, so the kernel drops further SYNs, as a dead host's network does.
class SilentHost {
 public:
  SilentHost() : listener_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listener_.get(), 0), 0);
    port_ = boundPort(listener_.get(), "silent host");
    filler_.reset(connectTcp("127.0.0.1", port_, Clock::now() + kGenerous));
  }
  StoreCandidate address() const { return {"127.0.0.1", port_}; }

 private:
  UniqueFd listener_;
  UniqueFd filler_;
  int port_ = 0;
};

TEST(StandbyStoreTest, AConnectSucceedsWhileItsAgentLivesAndIsRefusedOnceItDied) {
  auto standby = std::make_unique<StandbyStore>("127.0.0.1");
  const int port = standby->port();
  EXPECT_TRUE(tryConnectTcp("127.0.0.1", port, Clock::now() + kGenerous).fd.valid());
  EXPECT_FALSE(standby->serving());
  standby.reset();
  ConnectAttempt gone = tryConnectTcp("127.0.0.1", port, Clock::now() + kGenerous);
  EXPECT_FALSE(gone.fd.valid());
  EXPECT_EQ(gone.error, ECONNREFUSED);
}

TEST(StandbyStoreTest, ServesTheHellosThatWaitedInItsBacklog) {
  StandbyStore standby("127.0.0.1");
  UniqueFd early(connectTcp("127.0.0.1", standby.port(), Clock::now() + kGenerous));
  std::string hello;
  encodeFrame(Frame{Op::kHello, {kToken}}, hello);
  writeAll(early.get(), hello, "standby");
  auto server = standby.serve(kToken);
  EXPECT_TRUE(standby.serving());
  std::string reply;
  ASSERT_TRUE(readSome(early.get(), reply, Clock::now() + kGenerous, "standby"));
  Frame frame;
  size_t used = 0;
  ASSERT_EQ(decodeFrame(reply, frame, used), DecodeStatus::kFrame);
  EXPECT_EQ(frame.op, Op::kOk);
  StoreClient client("127.0.0.1", server->port(), kToken, kGenerous);
  client.set("k", "v");
  EXPECT_EQ(client.get("k", kGenerous), "v");
}

TEST(StandbyStoreTest, ServesOnlyOnce) {
  StandbyStore standby("127.0.0.1");
  auto server = standby.serve(kToken);
  try {
    standby.serve(kToken);
    FAIL() << "a second serve() was accepted";
  } catch (const EnforceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("the standby store at port " + std::to_string(standby.port()) +
                                    " serves already"));
    EXPECT_EQ(e.exitCode(), ExitCode::kInternal);
  }
}

TEST(StoreSuccessionTest, TheFirstLiveCandidateAfterTheLostStoreServes) {
  Agents agents(4);
  auto first = agents.standby(0).serve(kToken);
  first.reset();  // the store's agent died: its address is refused
  const StoreCandidate lost = agents.candidates()[0];
  std::vector<StoreLocation> found = agents.walkAtOnce({1, 2, 3}, lost, {});
  for (const auto& f : found) EXPECT_EQ(addressOf(f.address), addressOf(agents.candidates()[1]));
  ASSERT_TRUE(found[0].server);
  EXPECT_EQ(serversAmong(found), 1u);
  StoreClient client("127.0.0.1", found[2].address.port, kToken, kGenerous);
  client.set("after", "succession");
  EXPECT_EQ(client.get("after", kGenerous), "succession");
}

TEST(StoreSuccessionTest, AWalkerWaitsForALiveCandidateThatWalksLate) {
  Agents agents(3);
  const StoreCandidate lost{"127.0.0.1", 1};  // the first store, at another address
  std::vector<StoreLocation> found = agents.walkAtOnce({2, 1, 0}, lost, {0ms, 0ms, 200ms});
  for (const auto& f : found) EXPECT_EQ(f.address.port, agents.candidates()[0].port);
  EXPECT_TRUE(found[2].server);
  EXPECT_EQ(serversAmong(found), 1u);
}

TEST(StoreSuccessionTest, ConcurrentWalkersNeverStartTwoStores) {
  std::mt19937 random(27);
  std::uniform_int_distribution<int> jitter(0, 3000);
  for (int round = 0; round < 60; ++round) {
    Agents agents(6);
    agents.kill(0);
    if (round % 3 == 1) agents.kill(1);
    const size_t expected = round % 3 == 1 ? 2 : 1;
    const StoreCandidate lost = round % 2 ? agents.candidates()[0] : StoreCandidate{"x", 1};
    std::vector<size_t> who;
    std::vector<std::chrono::microseconds> delays;
    for (size_t i = expected; i < 6; ++i) {
      who.push_back(i);
      delays.emplace_back(jitter(random));
    }
    std::vector<StoreLocation> found = agents.walkAtOnce(who, lost, delays);
    ASSERT_EQ(serversAmong(found), 1u) << "round " << round;
    for (const auto& f : found) {
      ASSERT_EQ(f.address.port, agents.candidates()[expected].port) << "round " << round;
    }
  }
}

TEST(StoreSuccessionTest, TheLostAddressIsSkippedEvenWhileItsAgentLives) {
  Agents agents(3);
  const StoreCandidate lost = agents.candidates()[0];  // its server failed; its agent lives
  std::vector<StoreLocation> found = agents.walkAtOnce({0, 1, 2}, lost, {});
  for (const auto& f : found) EXPECT_EQ(f.address.port, agents.candidates()[1].port);
  EXPECT_TRUE(found[1].server);
  EXPECT_EQ(serversAmong(found), 1u);
}

TEST(StoreSuccessionTest, AHostThatDoesNotAnswerIsSkippedAfterTheConnectTimeout) {
  SilentHost silent;
  Agents agents(0);
  agents.add();
  std::vector<StoreCandidate> candidates{silent.address(), agents.candidates()[0]};
  SuccessionOptions options;
  options.connectTimeout = 200ms;
  StoreLocation found =
      findOrBecomeStore(candidates, 1, agents.standby(0), kToken, {"x", 1}, options);
  EXPECT_EQ(found.address.port, agents.candidates()[0].port);
  EXPECT_TRUE(found.server);
}

TEST(StoreSuccessionTest, ALiveCandidateThatNeverServesEndsTheWalkWithATimeout) {
  Agents agents(2);
  SuccessionOptions options;
  options.timeout = 200ms;
  try {
    agents.walk(1, {"10.0.0.1", 29400}, options);
    FAIL() << "the walk passed a live candidate";
  } catch (const TimeoutError& e) {
    EXPECT_EQ(std::string(e.what()),
              "store succession: candidate 0 (" + addressOf(agents.candidates()[0]) +
                  ") is alive but did not serve the rendezvous store within 0.2 s of the loss "
                  "of 10.0.0.1:29400; this agent serves none itself, since two stores would "
                  "split the job");
    EXPECT_EQ(e.exitCode(), ExitCode::kTimeout);
  }
  EXPECT_FALSE(agents.standby(1).serving());
}

TEST(StoreSuccessionTest, ACandidateWithAnotherTokenIsARendezvousError) {
  Agents agents(2);
  auto other = agents.standby(0).serve("another job's token");
  try {
    agents.walk(1, {"x", 1});
    FAIL() << "a store with another token was taken";
  } catch (const RendezvousError& e) {
    EXPECT_EQ(std::string(e.what()),
              "store succession: candidate 0 (" + addressOf(agents.candidates()[0]) +
                  ") refused this agent's token: every agent of a job needs the same "
                  "DISTRUN_TOKEN");
    EXPECT_EQ(e.exitCode(), ExitCode::kRendezvous);
  }
}

TEST(StoreSuccessionTest, TheLostStoresOwnAgentWithNoOneLeftIsARendezvousError) {
  Agents agents(3);
  agents.kill(1);
  agents.kill(2);
  const StoreCandidate lost = agents.candidates()[0];
  try {
    agents.walk(0, lost);
    FAIL() << "the lost store's agent served again";
  } catch (const RendezvousError& e) {
    EXPECT_EQ(std::string(e.what()),
              "store succession: no candidate serves the rendezvous store after the loss of " +
                  addressOf(lost) +
                  ": this agent hosted it, and the other 2 candidate(s) "
                  "are gone");
    EXPECT_EQ(e.exitCode(), ExitCode::kRendezvous);
  }
}

TEST(StoreSuccessionTest, ASelfIndexOutsideTheListIsABug) {
  Agents agents(1);
  EXPECT_THROW(findOrBecomeStore(agents.candidates(), 1, agents.standby(0), kToken, {"x", 1}),
               EnforceError);
}

}  // namespace
}  // namespace distrun::rdzv
