// NCCL's unique id through the store: made once, by rank 0, read by all.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "distrun/comm/nccl/unique_id.h"
#include "distrun/common/error.h"
#include "distrun/rdzv/in_memory_store.h"

namespace distrun::comm::nccl {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

ncclUniqueId idOfBytes(char first) {
  ncclUniqueId id;
  for (size_t i = 0; i < sizeof id.internal; ++i) id.internal[i] = static_cast<char>(first + i);
  return id;
}

TEST(UniqueIdTest, RankZeroMakesTheIdOnceAndEveryRankGetsItsBytes) {
  rdzv::InMemoryStore store;
  constexpr int kRanks = 4;
  std::atomic<int> made{0};
  std::vector<ncclUniqueId> ids(kRanks);
  std::vector<std::thread> ranks;
  // The others ask first: they wait for rank 0.
  for (int r = kRanks - 1; r >= 0; --r) {
    ranks.emplace_back([&, r] {
      ids[static_cast<size_t>(r)] = shareUniqueId(
          store, "comm/x/nccl_id", r,
          [&] {
            ++made;
            return idOfBytes('a');
          },
          30s);
    });
  }
  for (std::thread& t : ranks) t.join();
  EXPECT_EQ(made.load(), 1);
  const ncclUniqueId expected = idOfBytes('a');
  for (const ncclUniqueId& id : ids) {
    EXPECT_EQ(std::memcmp(id.internal, expected.internal, sizeof id.internal), 0);
  }
}

TEST(UniqueIdTest, ARankWhoseRankZeroNeverComesTimesOutNamingIt) {
  rdzv::InMemoryStore store("127.0.0.1:29500");
  try {
    shareUniqueId(
        store, "comm/x/nccl_id", 3, [] { return idOfBytes('a'); }, 50ms);
    ADD_FAILURE() << "no TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 0 did not publish NCCL's unique id at comm/x/nccl_id in "
                                    "the store 127.0.0.1:29500 within 0.05 s"));
  }
}

TEST(UniqueIdTest, SomethingElseAtTheKeyIsADataErrorNotAWrongId) {
  rdzv::InMemoryStore store;
  store.set("comm/x/nccl_id", "not an id");
  EXPECT_THROW(shareUniqueId(
                   store, "comm/x/nccl_id", 1, [] { return idOfBytes('a'); }, 1s),
               DataError);
}

}  // namespace
}  // namespace distrun::comm::nccl
