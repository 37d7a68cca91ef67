#include "distrun/comm/shm/faster_path.h"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distrun/comm/shm/shared_memory_collectives.h"
#include "distrun/comm/shm/shared_segment.h"

namespace distrun::comm {
namespace {

// The ways a chooser takes over `calls` calls of 1000 bytes, where way 0
// moves `speed0` bytes a second and way 1 `speed1`.
std::vector<int> waysTaken(FasterPath& choice, int calls, double speed0, double speed1) {
  std::vector<int> ways;
  for (int k = 0; k < calls; ++k) {
    const int way = choice.next();
    ways.push_back(way);
    choice.took(way, 1000, 1000.0 / (way == 0 ? speed0 : speed1));
  }
  return ways;
}

// Each way's first call is not timed (a first call pays for first touches).
TEST(FasterPathTest, TimesEachWayAfterItsFirstCallThenTakesTheFasterAndProbesTheOther) {
  FasterPath choice(4);
  EXPECT_EQ(waysTaken(choice, 10, 1.0, 2.0), (std::vector<int>{0, 0, 1, 1, 1, 0, 1, 1, 1, 0}));
  FasterPath slower(4);
  EXPECT_EQ(waysTaken(slower, 10, 1.0, 0.5), (std::vector<int>{0, 0, 1, 1, 0, 1, 0, 0, 0, 1}));
}

// What a probe finds replaces what was known: once way 0 turns faster, way
// 1 is still taken until the next probe of way 0, and from then on way 0.
TEST(FasterPathTest, AProbeThatFindsTheOtherWayFasterSwitches) {
  FasterPath choice(3);
  EXPECT_EQ(waysTaken(choice, 6, 1.0, 2.0), (std::vector<int>{0, 0, 1, 1, 0, 1}));
  EXPECT_EQ(waysTaken(choice, 6, 4.0, 2.0), (std::vector<int>{1, 0, 0, 0, 1, 0}));
}

TEST(FasterPathTest, UntimedCallsAreIgnored) {
  FasterPath choice(4);
  choice.took(0, 0, 1.0);
  choice.took(0, 10, 0.0);
  choice.took(2, 10, 1.0);
  EXPECT_EQ(choice.next(), 0);
}

// Two ranks of one segment (threads) that read each other directly and
// choose the way of allreduces and allgathers of at least 1 MB.
std::vector<std::unique_ptr<SharedMemoryCollectives>> choosingRanks() {
  constexpr int kRanks = 2;
  constexpr size_t kSlot = 64 << 10;
  const std::string name = "/distrun-test-choice-" + std::to_string(::getpid());
  SharedSegment made =
      SharedSegment::create(name, SharedMemoryCollectives::segmentBytes(kRanks, kSlot));
  SharedMemoryCollectives::format(made, kRanks, kSlot);
  std::vector<std::unique_ptr<SharedMemoryCollectives>> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.push_back(std::make_unique<SharedMemoryCollectives>(
        SharedSegment::open(name, made.size()), r, kRanks, kSlot, std::chrono::seconds(30)));
  }
  SharedSegment::unlink(name);
  for (auto& rank : ranks) {
    rank->readPeersDirectly(0);
    rank->reduceBySharesFrom(0);
    rank->chooseAllreducePathFrom(1'000'000);
    rank->chooseAllgatherPathFrom(1'000'000);
  }
  return ranks;
}

// 40 rounds of an allreduce and an allgather of 1 MB, interleaved: each
// kind takes both ways (the second is timed, then probed), every call the
// same way on both ranks (or they would fail as a mismatch), and every
// result is exact.
TEST(FasterPathTest, ChosenCallsTakeOneWayOnEveryRankAndGiveExactResults) {
  constexpr size_t kCount = 250'007;
  auto ranks = choosingRanks();
  ASSERT_TRUE(ranks[0]->canReadEveryPeer());
  std::vector<std::string> errors(ranks.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks.size(); ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> data(kCount), all(2 * kCount);
      try {
        for (size_t call = 0; call < 40; ++call) {
          for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<float>((i + call) % 1000 + r);
          ranks[r]->allgather(data.data(), all.data(), kCount / 2, DataType::kFloat32);
          ranks[r]->run(data.data(), data.data(), kCount, DataType::kFloat32, ReduceOp::kSum);
          for (size_t i = 0; i < kCount; i += 7) {
            ASSERT_EQ(data[i], static_cast<float>(2 * ((i + call) % 1000) + 1))
                << "allreduce " << call << ", element " << i;
          }
          for (size_t i = 0; i < kCount; i += 5) {
            const size_t from = i / (kCount / 2), at = i % (kCount / 2);
            ASSERT_EQ(all[i], static_cast<float>((at + call) % 1000 + from))
                << "allgather " << call << ", element " << i;
          }
        }
      } catch (const SharedMemoryFailure& f) {
        errors[r] = f.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors, std::vector<std::string>(ranks.size(), ""));
  for (const auto& taken : {ranks[0]->chosenAllreducePaths(), ranks[0]->chosenAllgatherPaths()}) {
    EXPECT_EQ(taken.first + taken.second, 40u);
    EXPECT_GE(taken.first, 2u);
    EXPECT_GE(taken.second, 2u);
  }
  EXPECT_EQ(ranks[1]->chosenAllreducePaths(), ranks[0]->chosenAllreducePaths());
  EXPECT_EQ(ranks[1]->chosenAllgatherPaths(), ranks[0]->chosenAllgatherPaths());
}

}  // namespace
}  // namespace distrun::comm
