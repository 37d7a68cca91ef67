// The store's compare-and-set and its batches of pipelined requests.
#include <sys/socket.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"
#include "distrun/rdzv/store_testing.h"
#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {
namespace {

using namespace std::chrono_literals;
using Replies = std::vector<std::optional<std::string>>;
using store_testing::kGenerous;

class StoreBatchTest : public ::testing::Test {
 protected:
  StoreServer server{"127.0.0.1", 0, "secret"};
  StoreClient client() { return StoreClient("127.0.0.1", server.port(), "secret", kGenerous); }
};

TEST_F(StoreBatchTest, CompareSetSetsOnlyWhenTheValueIsTheExpectedOne) {
  StoreClient c = client();
  EXPECT_EQ(c.compareSet("k", "", "first"), "first");  // absent reads as ""
  EXPECT_EQ(c.compareSet("k", "", "second"), "first");
  EXPECT_EQ(c.compareSet("k", "other", "second"), "first");
  EXPECT_EQ(c.compareSet("k", "first", "second"), "second");
  EXPECT_EQ(c.get("k", kGenerous), "second");
  EXPECT_EQ(c.compareSet("absent", "x", "y"), "");
  EXPECT_FALSE(c.tryGet("absent").has_value());
}

TEST_F(StoreBatchTest, CompareSetWakesAWaitingGet) {
  StoreClient waiter = client();
  auto value = std::async(std::launch::async, [&] { return waiter.get("k", kGenerous); });
  client().compareSet("k", "", "won");
  EXPECT_EQ(value.get(), "won");
}

// Many clients race to move the same key from "" to their own name: exactly
// one wins, and every one of them is told the winner.
TEST_F(StoreBatchTest, CompareSetHasExactlyOneWinnerUnderRaces) {
  for (int trial = 0; trial < 20; ++trial) {
    const std::string key = "race/" + std::to_string(trial);
    std::atomic<int> winners{0};
    std::vector<std::future<std::string>> seen;
    for (int t = 0; t < 8; ++t) {
      seen.push_back(std::async(std::launch::async, [&, t] {
        const std::string mine = "agent" + std::to_string(t);
        std::string now = client().compareSet(key, "", mine);
        if (now == mine) winners++;
        return now;
      }));
    }
    std::string first = seen[0].get();
    for (size_t t = 1; t < seen.size(); ++t) EXPECT_EQ(seen[t].get(), first);
    EXPECT_EQ(winners.load(), 1);
  }
}

TEST_F(StoreBatchTest, ABatchIsAnsweredInOrder) {
  StoreClient c = client();
  c.set("there", "v");
  StoreBatch batch;
  batch.set("a", "1").add("n", 5).tryGet("missing").get("there").tryGet("a").add("n", -2);
  EXPECT_EQ(c.run(batch, kGenerous), (Replies{"", "5", std::nullopt, "v", "1", "3"}));
  EXPECT_EQ(batch.size(), 6u);
}

TEST_F(StoreBatchTest, AGetInABatchHoldsBackTheRequestsBehindIt) {
  StoreClient c = client();
  StoreBatch batch;
  batch.get("late").tryGet("after");
  std::thread setter([this] {
    StoreClient other = client();
    other.set("after", "set before late");
    std::this_thread::sleep_for(50ms);
    other.set("late", "now");
  });
  EXPECT_EQ(c.run(batch, kGenerous), (Replies{"now", "set before late"}));
  setter.join();
}

TEST_F(StoreBatchTest, ABatchOfThousandsIsOneWriteAndEveryReplyComes) {
  StoreClient c = client();
  StoreBatch writes, reads;
  for (int i = 0; i < 20000; ++i) {
    writes.set("k/" + std::to_string(i), std::string(100, 'x') + std::to_string(i));
    reads.get("k/" + std::to_string(i));
  }
  EXPECT_EQ(c.run(writes, kGenerous).size(), 20000u);
  Replies values = c.run(reads, kGenerous);
  ASSERT_EQ(values.size(), 20000u);
  EXPECT_EQ(values[12345], std::string(100, 'x') + "12345");
}

// The store holds the set's reply back while the get behind it waits (one
// send for both): a batch that timed out may have had requests applied that
// it got no reply for.
TEST_F(StoreBatchTest, ATimedOutBatchGivesFewerRepliesAndTheClientStaysUsable) {
  StoreClient c = client();
  StoreBatch batch;
  batch.set("before", "1").get("never").set("behind", "2");
  EXPECT_EQ(c.run(batch, 100ms), Replies{});
  EXPECT_EQ(c.tryGet("before"), "1");
  c.set("after", "ok");
  EXPECT_EQ(c.get("after", kGenerous), "ok");
}

TEST_F(StoreBatchTest, NoDeadlineIsMillisecondsMax) {
  StoreClient c = client();
  StoreBatch batch;
  batch.add("n", 1);
  EXPECT_EQ(c.run(batch, std::chrono::milliseconds::max()), (Replies{"1"}));
}

TEST_F(StoreBatchTest, ABatchToAStoppedStoreIsARendezvousErrorNamingIt) {
  StoreClient c = client();
  server.stop();
  StoreBatch batch;
  batch.get("k");
  try {
    c.run(batch, kGenerous);
    FAIL() << "expected a RendezvousError";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("rendezvous store at 127.0.0.1:" +
                                         std::to_string(server.port())),
              std::string::npos)
        << e.what();
  }
}

TEST(WireCompareSet, CarriesThreeFields) {
  EXPECT_EQ(requestFieldCount(Op::kCompareSet), 3u);
  std::string bytes;
  encodeFrame(Frame{Op::kCompareSet, {"k", "old", "new"}}, bytes);
  Frame f;
  size_t used = 0;
  ASSERT_EQ(decodeFrame(bytes, f, used), DecodeStatus::kFrame);
  EXPECT_EQ(f.op, Op::kCompareSet);
  EXPECT_EQ(f.fields, (std::vector<std::string>{"k", "old", "new"}));
}

}  // namespace
}  // namespace distrun::rdzv
