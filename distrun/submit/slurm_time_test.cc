#include "distrun/submit/slurm_time.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::submit {
namespace {

TEST(SlurmTimeTest, ReadsEveryFormSbatchTakes) {
  EXPECT_EQ(parseSlurmTime("90", "--time"), 90 * 60);
  EXPECT_EQ(parseSlurmTime("1:30", "--time"), 90);
  EXPECT_EQ(parseSlurmTime("01:30:00", "--time"), 5400);
  EXPECT_EQ(parseSlurmTime("2-00", "--time"), 2 * 86400);
  EXPECT_EQ(parseSlurmTime("1-02:03", "--time"), 86400 + 2 * 3600 + 3 * 60);
  EXPECT_EQ(parseSlurmTime("1-02:03:04", "--time"), 86400 + 2 * 3600 + 3 * 60 + 4);
}

TEST(SlurmTimeTest, AnythingElseIsAUsageErrorNamingTheFlagAndTheForms) {
  for (const char* bad : {"1h", "90m", "-5", "1:2:3:4", "", "1-2-3", "1-1:2:3:4", "a:b"}) {
    try {
      parseSlurmTime(bad, "--time");
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), ::testing::StartsWith(std::string("--time '") + bad +
                                                  "': expected Slurm's MINUTES, "));
    }
  }
}

TEST(SlurmTimeTest, FormatsAsSbatchPrints) {
  EXPECT_EQ(formatSlurmTime(5400), "01:30:00");
  EXPECT_EQ(formatSlurmTime(86400 + 61), "1-00:01:01");
  EXPECT_EQ(formatSlurmTime(0), "00:00:00");
}

}  // namespace
}  // namespace distrun::submit
