#include "distrun/common/strings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun {
namespace {

TEST(ParseCountTest, AcceptsWholeNumbersOnly) {
  EXPECT_EQ(parseCount("0", "X"), 0);
  EXPECT_EQ(parseCount("2147483647", "X"), 2147483647);
  auto message = [](const std::string& text) {
    try {
      parseCount(text, "SLURM_NTASKS");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(""), "SLURM_NTASKS is empty: expected a whole number");
  EXPECT_EQ(message("-1"), "SLURM_NTASKS='-1' is not a whole number (unexpected '-')");
  EXPECT_EQ(message("4 "), "SLURM_NTASKS='4 ' is not a whole number (unexpected ' ')");
  EXPECT_EQ(message("2147483648"), "SLURM_NTASKS='2147483648' is too large (at most 2147483647)");
}

TEST(StringsTest, SplitJoinTrim) {
  EXPECT_THAT(split("a,,b", ','), ::testing::ElementsAre("a", "", "b"));
  EXPECT_THAT(split("", ','), ::testing::ElementsAre(""));
  EXPECT_EQ(join({"a", "b"}, ", "), "a, b");
  EXPECT_EQ(trim("  x y \n"), "x y");
}

TEST(StringsTest, ShellQuoteRoundTripsThroughSh) {
  EXPECT_EQ(shellQuote("hsn0,hsn1"), "hsn0,hsn1");
  EXPECT_EQ(shellQuote(""), "''");
  EXPECT_EQ(shellQuote("a b"), "'a b'");
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
}

TEST(StringsTest, GlobMatch) {
  EXPECT_TRUE(globMatch("lumi*", "lumi"));
  EXPECT_TRUE(globMatch("n?d*", "node12"));
  EXPECT_FALSE(globMatch("mn5", "mn5-acc"));
  EXPECT_TRUE(globMatch("*", ""));
}

TEST(StringsTest, EditDistanceCountsASwapAsOneEdit) {
  EXPECT_EQ(editDistance("run", "run"), 0u);
  EXPECT_EQ(editDistance("rnu", "run"), 1u);
  EXPECT_EQ(editDistance("--logdir", "--log-dir"), 1u);
  EXPECT_EQ(editDistance("", "env"), 3u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
}

TEST(StringsTest, ClosestNameIsCloseOrNothing) {
  const std::vector<std::string> known = {"--max-restarts", "--log-dir", "--lr", "run"};
  EXPECT_EQ(closestName("--max-restart", known), "--max-restarts");
  EXPECT_EQ(closestName("--logdir", known), "--log-dir");
  EXPECT_EQ(closestName("rnu", known), "run");
  EXPECT_EQ(closestName("--x", known), std::nullopt);
  EXPECT_EQ(closestName("--frobnicate", known), std::nullopt);
}

}  // namespace
}  // namespace distrun
