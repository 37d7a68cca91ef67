// What every Store does, run on both: a StoreClient of a real StoreServer
// and the InMemoryStore that unit tests use in its place.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/rdzv/in_memory_store.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"
#include "distrun/rdzv/store_testing.h"

namespace distrun::rdzv {
namespace {

using namespace std::chrono_literals;
using store_testing::kGenerous;

// One store seen by two holders (two ranks): clients of one server, or the
// one InMemoryStore twice.
class Stores {
 public:
  virtual ~Stores() = default;
  virtual Store& first() = 0;
  virtual Store& second() = 0;
};

class ServerStores final : public Stores {
 public:
  Store& first() override { return first_; }
  Store& second() override { return second_; }

 private:
  StoreServer server_{"127.0.0.1", 0, "contract"};
  StoreClient first_{"127.0.0.1", server_.port(), "contract", kGenerous};
  StoreClient second_{"127.0.0.1", server_.port(), "contract", kGenerous};
};

class MemoryStores final : public Stores {
 public:
  Store& first() override { return store_; }
  Store& second() override { return store_; }

 private:
  InMemoryStore store_;
};

class StoreContractTest : public ::testing::TestWithParam<bool> {
 protected:
  StoreContractTest()
      : stores_(GetParam() ? std::unique_ptr<Stores>(std::make_unique<MemoryStores>())
                           : std::make_unique<ServerStores>()) {}
  Store& a() { return stores_->first(); }
  Store& b() { return stores_->second(); }

 private:
  std::unique_ptr<Stores> stores_;
};

TEST_P(StoreContractTest, WhatOneSetsTheOtherReads) {
  a().set("k", "v");
  EXPECT_EQ(b().get("k", kGenerous), "v");
  EXPECT_EQ(b().tryGet("k"), "v");
  EXPECT_EQ(b().tryGet("absent"), std::nullopt);
  a().set("k", "w");
  EXPECT_EQ(b().tryGet("k"), "w");
}

TEST_P(StoreContractTest, AddsCountFromZero) {
  EXPECT_EQ(a().add("n", 2), 2);
  EXPECT_EQ(b().add("n", -5), -3);
  EXPECT_EQ(a().tryGet("n"), "-3");
}

TEST_P(StoreContractTest, CompareSetSetsOnlyWhatItExpects) {
  EXPECT_EQ(a().compareSet("c", "", "first"), "first");
  EXPECT_EQ(b().compareSet("c", "", "second"), "first");
  EXPECT_EQ(b().compareSet("c", "first", "second"), "second");
}

TEST_P(StoreContractTest, AGetWaitsForTheKeyOrItsTimeout) {
  EXPECT_EQ(a().get("late", 50ms), std::nullopt);
  std::thread setter([&] {
    std::this_thread::sleep_for(50ms);
    b().set("late", "here");
  });
  EXPECT_EQ(a().get("late", kGenerous), "here");
  setter.join();
}

TEST_P(StoreContractTest, ABatchAnswersEachRequestInOrder) {
  b().set("there", "1");
  StoreBatch batch;
  batch.set("x", "y").add("m", 4).tryGet("none").get("there").get("x");
  EXPECT_EQ(batch.size(), 5u);
  const std::vector<std::optional<std::string>> replies = a().run(batch, kGenerous);
  const std::vector<std::optional<std::string>> expected{"", "4", std::nullopt, "1", "y"};
  EXPECT_EQ(replies, expected);
}

// A get of a key nobody sets holds back what follows: the replies stop at
// the latest there when the time passes (a StoreServer holds back even the
// replies before it, sent in one write with it), and what came before was
// applied.
TEST_P(StoreContractTest, ABatchWhoseTimePassesStopsAtTheWait) {
  StoreBatch batch;
  batch.add("counted", 1).get("never").set("after", "1");
  const auto replies = a().run(batch, 100ms);
  ASSERT_LE(replies.size(), 1u);
  if (!replies.empty()) {
    EXPECT_EQ(replies[0], "1");
  }
  EXPECT_EQ(b().tryGet("counted"), "1");
  EXPECT_EQ(b().tryGet("after"), std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContractTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "InMemoryStore" : "StoreClient";
                         });

TEST(InMemoryStoreTest, AddingToWhatIsNotANumberIsARendezvousError) {
  InMemoryStore store("memory:test");
  store.set("text", "abc");
  try {
    store.add("text", 1);
    FAIL();
  } catch (const RendezvousError& e) {
    EXPECT_STREQ(e.what(), "the store at memory:test: 'text' holds 'abc', not a number to add to");
  }
  store.set("big", std::to_string(INT64_MAX));
  EXPECT_THROW(store.add("big", 1), RendezvousError);
}

}  // namespace
}  // namespace distrun::rdzv
