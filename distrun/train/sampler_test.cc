#include "distrun/train/sampler.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

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
