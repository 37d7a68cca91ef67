#include "distrun/common/enforce.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace distrun {
namespace {

using ::testing::HasSubstr;

TEST(EnforceTest, PassingChecksDoNothing) {
  DISTRUN_ENFORCE(1 + 1 == 2);
  DISTRUN_ENFORCE_EQ(2, 2, "never printed");
  DISTRUN_ENFORCE_LT(1, 2);
}

TEST(EnforceTest, FailureNamesExpressionValuesAndLocation) {
  try {
    int ranks = 3;
    DISTRUN_ENFORCE_EQ(ranks, 4, "world of ", 4);
    FAIL();
  } catch (const EnforceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("enforce_test.cc:"));
    EXPECT_THAT(e.what(), HasSubstr("ranks == 4 (3 vs. 4): world of 4"));
    EXPECT_EQ(e.exitCode(), ExitCode::kInternal);
  }
  try {
    DISTRUN_ENFORCE(false, "bad ", "state");
    FAIL();
  } catch (const EnforceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("false: bad state"));
  }
}

TEST(ErrorTest, ExitCodesFollowTheFamily) {
  EXPECT_EQ(exitCodeFor(ConfigError("x")), ExitCode::kConfig);
  EXPECT_EQ(exitCodeFor(UsageError("x")), ExitCode::kUsage);
  EXPECT_EQ(exitCodeFor(IoError("x")), ExitCode::kIo);
  EXPECT_EQ(exitCodeFor(std::runtime_error("x")), ExitCode::kInternal);
  SystemError e("open", "/x", ENOENT);
  EXPECT_STREQ(e.what(), "open(/x) failed: No such file or directory");
  EXPECT_EQ(e.exitCode(), ExitCode::kSystem);
}

}  // namespace
}  // namespace distrun
