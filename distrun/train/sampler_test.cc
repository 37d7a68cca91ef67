#include "distrun/train/sampler.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::train {
namespace {

using ::testing::ElementsAre;
using Options = DistributedSampler::Options;

Options ordered(int64_t size, int world, int rank, bool dropLast) {
  return {.datasetSize = size,
          .worldSize = world,
          .rank = rank,
          .shuffle = false,
          .seed = 0,
          .dropLast = dropLast};
}

Options shuffled(int64_t size, int world, int rank, uint64_t seed) {
  return {.datasetSize = size,
          .worldSize = world,
          .rank = rank,
          .shuffle = true,
          .seed = seed,
          .dropLast = false};
}

std::vector<int64_t> indicesAt(const Options& options, int64_t epoch = 0) {
  DistributedSampler sampler(options);
  sampler.setEpoch(epoch);
  return sampler.indices();
}

TEST(DistributedSamplerTest, SamplesPerRankRoundUpOrWithDropLastDown) {
  struct Case {
    int64_t size;
    int world;
    bool dropLast;
    int64_t numSamples;
  };
  for (Case c :
       {Case{10, 3, false, 4}, Case{10, 3, true, 3}, Case{9, 3, true, 3}, Case{0, 3, false, 0},
        Case{0, 3, true, 0}, Case{2, 5, false, 1}, Case{1, 5, true, 0}, Case{7, 1, false, 7}}) {
    DistributedSampler sampler(ordered(c.size, c.world, 0, c.dropLast));
    EXPECT_EQ(sampler.numSamples(), c.numSamples)
        << c.size << " over " << c.world << " dropLast " << c.dropLast;
    EXPECT_EQ(sampler.totalSize(), c.numSamples * c.world);
    EXPECT_EQ(sampler.indices().size(), static_cast<size_t>(c.numSamples));
  }
}

TEST(DistributedSamplerTest, RanksTakeEveryWorldSizethIndex) {
  EXPECT_THAT(indicesAt(ordered(9, 3, 0, false)), ElementsAre(0, 3, 6));
  EXPECT_THAT(indicesAt(ordered(9, 3, 1, false)), ElementsAre(1, 4, 7));
  EXPECT_THAT(indicesAt(ordered(9, 3, 2, false)), ElementsAre(2, 5, 8));
}

TEST(DistributedSamplerTest, PaddingRepeatsTheListFromItsStart) {
  // 0..9 padded to 12: 0..9, 0, 1.
  EXPECT_THAT(indicesAt(ordered(10, 4, 0, false)), ElementsAre(0, 4, 8));
  EXPECT_THAT(indicesAt(ordered(10, 4, 2, false)), ElementsAre(2, 6, 0));
  EXPECT_THAT(indicesAt(ordered(10, 4, 3, false)), ElementsAre(3, 7, 1));
  // Padding longer than the list: 0, 1, 2 repeated to 8.
  EXPECT_THAT(indicesAt(ordered(3, 8, 5, false)), ElementsAre(2));
  EXPECT_THAT(indicesAt(ordered(3, 8, 7, false)), ElementsAre(1));
  EXPECT_THAT(indicesAt(ordered(1, 4, 3, false)), ElementsAre(0));
}

TEST(DistributedSamplerTest, DropLastTruncatesTheTail) {
  EXPECT_THAT(indicesAt(ordered(10, 4, 0, true)), ElementsAre(0, 4));
  EXPECT_THAT(indicesAt(ordered(10, 4, 3, true)), ElementsAre(3, 7));
  EXPECT_THAT(indicesAt(ordered(3, 4, 1, true)), ElementsAre());
}

TEST(DistributedSamplerTest, RanksTogetherCoverTheDatasetOnce) {
  for (int64_t epoch : {0, 1, 5}) {
    std::multiset<int64_t> seen;
    for (int rank = 0; rank < 3; ++rank) {
      std::vector<int64_t> mine = indicesAt(shuffled(99, 3, rank, 42), epoch);
      EXPECT_EQ(mine.size(), 33u);
      seen.insert(mine.begin(), mine.end());
    }
    std::vector<int64_t> all(99);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_THAT(std::vector<int64_t>(seen.begin(), seen.end()), ::testing::ContainerEq(all));
  }
}

TEST(DistributedSamplerTest, ShufflingIsAPermutationFixedBySeedAndEpoch) {
  std::vector<int64_t> first = indicesAt(shuffled(50, 1, 0, 7));
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(50);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(first, identity);
  EXPECT_EQ(indicesAt(shuffled(50, 1, 0, 7)), first);
  EXPECT_NE(indicesAt(shuffled(50, 1, 0, 8)), first);
  EXPECT_NE(indicesAt(shuffled(50, 1, 0, 7), 1), first);
  // The generator is seeded with seed + epoch, as in PyTorch.
  EXPECT_EQ(indicesAt(shuffled(50, 1, 0, 6), 1), first);
}

TEST(DistributedSamplerTest, SetEpochChangesTheOrderAndIndicesIsRepeatable) {
  DistributedSampler sampler(shuffled(64, 2, 1, 0));
  EXPECT_EQ(sampler.epoch(), 0);
  std::vector<int64_t> epoch0 = sampler.indices();
  EXPECT_EQ(sampler.indices(), epoch0);
  sampler.setEpoch(3);
  EXPECT_EQ(sampler.epoch(), 3);
  EXPECT_NE(sampler.indices(), epoch0);
  EXPECT_EQ(sampler.indices(), sampler.indices());
}

// --- resuming an epoch mid-way ---

// The first `steps` batches of every rank of `world`, and the range left.
struct FirstPart {
  std::vector<int64_t> trained;
  EpochRange rest;
};

FirstPart trainFirstPart(Options o, int world, int64_t epoch, int64_t steps, int64_t batch) {
  FirstPart part;
  o.worldSize = world;
  for (int rank = 0; rank < world; ++rank) {
    o.rank = rank;
    DistributedSampler sampler(o);
    sampler.setEpoch(epoch);
    const std::vector<int64_t> mine = sampler.indices();
    const auto n =
        static_cast<ptrdiff_t>(std::min<size_t>(static_cast<size_t>(steps * batch), mine.size()));
    part.trained.insert(part.trained.end(), mine.begin(), mine.begin() + n);
    part.rest = sampler.remainingAfter(steps, batch);
  }
  return part;
}

// Every rank of `world` over `rest`: the rest of the epoch, and its padding.
std::vector<int64_t> trainRest(Options o, int world, int64_t epoch, EpochRange rest,
                               int64_t* padding) {
  std::vector<int64_t> trained;
  o.worldSize = world;
  for (int rank = 0; rank < world; ++rank) {
    o.rank = rank;
    DistributedSampler sampler(o);
    sampler.setEpoch(epoch, rest);
    const std::vector<int64_t> mine = sampler.indices();
    trained.insert(trained.end(), mine.begin(), mine.end());
    *padding = std::max<int64_t>(sampler.totalSize() - rest.size(), 0);
  }
  return trained;
}

// The whole epoch as a fresh `world` trains it: each sample once.
std::set<int64_t> epochSamples(Options o, int world, int64_t epoch) {
  std::set<int64_t> all;
  const std::vector<int64_t> every = trainFirstPart(o, world, epoch, 1 << 20, 1).trained;
  all.insert(every.begin(), every.end());
  return all;
}

// W ranks train the first `steps` batches of an epoch, W' ranks the rest:
// without dropLast every sample is trained, and only padding twice (each
// world pads at most its size - 1); with dropLast none twice, none outside
// W's epoch, and at most W' - 1 of it dropped.
void expectEverySampleOnce(const Options& o, int world, int resumed, int64_t steps, int64_t batch) {
  SCOPED_TRACE(::testing::Message()
               << world << " -> " << resumed << " ranks after " << steps << " steps, dropLast "
               << o.dropLast << ", shuffle " << o.shuffle << ", size " << o.datasetSize);
  const int64_t epoch = 3;
  const FirstPart first = trainFirstPart(o, world, epoch, steps, batch);
  int64_t padding = 0;
  const std::vector<int64_t> rest = trainRest(o, resumed, epoch, first.rest, &padding);
  std::multiset<int64_t> seen(first.trained.begin(), first.trained.end());
  seen.insert(rest.begin(), rest.end());
  const std::set<int64_t> distinct(seen.begin(), seen.end());
  const std::set<int64_t> expected = epochSamples(o, world, epoch);
  const auto twice = static_cast<int64_t>(seen.size() - distinct.size());
  if (!o.dropLast) {
    EXPECT_EQ(distinct, expected);
    const int64_t firstPadding =
        std::max<int64_t>(static_cast<int64_t>(first.trained.size()) - o.datasetSize, 0);
    EXPECT_EQ(twice, firstPadding + padding);
    EXPECT_LT(firstPadding, world);
    EXPECT_LT(padding, resumed);
    return;
  }
  EXPECT_EQ(twice, 0);
  EXPECT_TRUE(std::includes(expected.begin(), expected.end(), distinct.begin(), distinct.end()));
  EXPECT_LT(expected.size() - distinct.size(), static_cast<size_t>(resumed));
}

TEST(DistributedSamplerResumeTest, OldAndNewWorldTogetherTrainTheEpochOnce) {
  const std::vector<std::pair<int, int>> worlds = {{2, 1}, {2, 3}, {3, 2}, {4, 3}};
  for (auto [world, resumed] : worlds) {
    for (bool dropLast : {false, true}) {
      for (bool shuffle : {false, true}) {
        for (int64_t size : {37, 40, 5}) {
          Options o{.datasetSize = size, .shuffle = shuffle, .seed = 11, .dropLast = dropLast};
          for (int64_t steps = 0; steps <= 8; ++steps) {
            expectEverySampleOnce(o, world, resumed, steps, /*batch=*/3);
          }
        }
      }
    }
  }
}

TEST(DistributedSamplerResumeTest, TheRestIsSplitAsAFreshEpochOverIt) {
  // 0..9 on 2 ranks, 2 steps of 2: ranks 0 and 1 trained 0, 2, 4, 6 and
  // 1, 3, 5, 7; 8 and 9 are left, and 3 ranks split them, padded with 8.
  DistributedSampler two(ordered(10, 2, 0, false));
  const EpochRange rest = two.remainingAfter(2, 2);
  EXPECT_EQ(rest, (EpochRange{8, 10}));
  std::vector<std::vector<int64_t>> three;
  for (int rank = 0; rank < 3; ++rank) {
    DistributedSampler sampler(ordered(10, 3, rank, false));
    sampler.setEpoch(0, rest);
    EXPECT_EQ(sampler.range(), rest);
    EXPECT_EQ(sampler.numSamples(), 1);
    EXPECT_EQ(sampler.totalSize(), 3);
    three.push_back(sampler.indices());
  }
  EXPECT_THAT(three, ElementsAre(ElementsAre(8), ElementsAre(9), ElementsAre(8)));
  // With dropLast 2 ranks stop at 8 of 9 (the 9th is dropped): 1 is left
  // after 2 steps of 2, and 3 ranks drop it too.
  DistributedSampler dropping(ordered(9, 2, 0, true));
  EXPECT_EQ(dropping.remainingAfter(2, 2), (EpochRange{8, 8}));
  EXPECT_EQ(dropping.remainingAfter(1, 3), (EpochRange{6, 8}));
  DistributedSampler afterDrop(ordered(9, 3, 0, true));
  afterDrop.setEpoch(0, {6, 8});
  EXPECT_THAT(afterDrop.indices(), ElementsAre());
}

// What a snapshot after the epoch's last step (or before its first) leaves.
TEST(DistributedSamplerResumeTest, RemainingAfterEveryStepIsEmptyAndAfterNoneTheEpoch) {
  DistributedSampler sampler(shuffled(10, 4, 1, 0));  // 3 each, 2 of them padding
  EXPECT_EQ(sampler.remainingAfter(0, 2), (EpochRange{0, 10}));
  EXPECT_EQ(sampler.remainingAfter(1, 2), (EpochRange{8, 10}));
  EXPECT_EQ(sampler.remainingAfter(2, 2), (EpochRange{10, 10}));
  EXPECT_EQ(sampler.remainingAfter(int64_t{1} << 62, 1 << 30), (EpochRange{10, 10}));
  sampler.setEpoch(1, {10, 10});
  EXPECT_EQ(sampler.numSamples(), 0);
  EXPECT_THAT(sampler.indices(), ElementsAre());
  sampler.setEpoch(2);  // a whole epoch again
  EXPECT_EQ(sampler.range(), (EpochRange{0, 10}));
  EXPECT_EQ(sampler.numSamples(), 3);
}

// The same world over the rest takes each rank's own next indices: the
// resumed part continues the epoch as if it had not stopped (padding aside,
// which repeats the rest's start).
TEST(DistributedSamplerResumeTest, TheSameWorldOverTheRestContinuesEachRanksIndices) {
  for (int rank = 0; rank < 3; ++rank) {
    DistributedSampler whole(shuffled(30, 3, rank, 5));
    whole.setEpoch(2);
    DistributedSampler rest(shuffled(30, 3, rank, 5));
    rest.setEpoch(2, whole.remainingAfter(2, 2));
    const std::vector<int64_t> all = whole.indices();
    EXPECT_EQ(rest.indices(), std::vector<int64_t>(all.begin() + 4, all.end()));
  }
}

TEST(DistributedSamplerResumeTest, ABadRangeOrStepCountIsAUsageError) {
  DistributedSampler sampler(ordered(10, 2, 0, false));
  for (EpochRange bad : {EpochRange{-1, 4}, EpochRange{5, 4}, EpochRange{0, 11}}) {
    try {
      sampler.setEpoch(1, bad);
      ADD_FAILURE() << "no error";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                fmt::format("DistributedSampler::setEpoch: range [{}, {}) must have 0 <= begin "
                            "<= end <= datasetSize (10)",
                            bad.begin, bad.end));
    }
  }
  try {
    sampler.remainingAfter(3, 0);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "DistributedSampler::remainingAfter: expected steps 0 or more and batchSize at "
              "least 1, got 3 and 0");
  }
}

struct Failure {
  std::string message;
  ExitCode code = ExitCode::kSuccess;
};

Failure failureOf(const Options& options) {
  try {
    DistributedSampler sampler(options);
  } catch (const std::exception& e) {
    return {e.what(), exitCodeFor(e)};
  }
  return {"no error", ExitCode::kSuccess};
}

TEST(DistributedSamplerTest, RejectsAnImpossibleLayout) {
  Failure f = failureOf(ordered(10, 0, 0, false));
  EXPECT_EQ(f.message, "DistributedSampler::Options::worldSize must be at least 1, got 0");
  EXPECT_EQ(f.code, ExitCode::kUsage);
  f = failureOf(ordered(10, 3, 3, false));
  EXPECT_EQ(f.message,
            "DistributedSampler::Options::rank must be 0 to 2 (worldSize 3), "
            "got 3");
  EXPECT_EQ(f.code, ExitCode::kUsage);
  EXPECT_EQ(failureOf(ordered(10, 3, -1, false)).message,
            "DistributedSampler::Options::rank must be 0 to 2 (worldSize 3), "
            "got -1");
  f = failureOf(ordered(-1, 3, 0, false));
  EXPECT_EQ(f.message,
            "DistributedSampler::Options::datasetSize must be 0 or more, got "
            "-1");
  EXPECT_EQ(f.code, ExitCode::kUsage);
}

}  // namespace
}  // namespace distrun::train
