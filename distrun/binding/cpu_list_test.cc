#include "distrun/binding/cpu_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::binding {
namespace {

TEST(CpuListTest, ParsesTheKernelsListSyntax) {
  EXPECT_EQ(parseCpuList("0-3,7", "x"), (CpuList{0, 1, 2, 3, 7}));
  EXPECT_EQ(parseCpuList("9,1-2,2", "x"), (CpuList{1, 2, 9}));
  EXPECT_EQ(parseCpuList("5", "x"), (CpuList{5}));
}

TEST(CpuListTest, RefusesWhatIsNotAListNamingTheInput) {
  for (const char* bad : {"", "a", "1-", "-1", "3-1", "1,,2", "1.5", "99999"}) {
    try {
      parseCpuList(bad, "--cpu-bind");
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), ::testing::StartsWith(std::string("--cpu-bind '") + bad + "'"));
    }
  }
}

TEST(CpuListTest, FormatsRangesBack) {
  EXPECT_EQ(formatCpuList({0, 1, 2, 3, 7}), "0-3,7");
  EXPECT_EQ(formatCpuList({1, 3, 5}), "1,3,5");
  EXPECT_EQ(formatCpuList({}), "");
  EXPECT_EQ(parseCpuList(formatCpuList({4, 5, 6, 10, 11}), "x"), (CpuList{4, 5, 6, 10, 11}));
}

TEST(CpuListTest, MasksAreSlurmsHexWithoutLeadingZeros) {
  EXPECT_EQ(cpuMask({1, 2, 3, 4, 5, 6, 7}), "0xfe");
  EXPECT_EQ(cpuMask({0}), "0x1");
  EXPECT_EQ(cpuMask({4}), "0x10");
  EXPECT_EQ(cpuMask({57, 58, 59, 60, 61, 62, 63}), "0xfe00000000000000");
  EXPECT_EQ(cpuMask({64}), "0x10000000000000000");
  EXPECT_EQ(cpuMask({}), "0x0");
}

TEST(CpuListTest, WithoutRemovesTheGivenCpus) {
  EXPECT_EQ(without({0, 1, 2, 3}, {0, 2}), (CpuList{1, 3}));
  EXPECT_EQ(without({0, 1}, {}), (CpuList{0, 1}));
}

}  // namespace
}  // namespace distrun::binding
