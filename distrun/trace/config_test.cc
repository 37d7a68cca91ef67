#include "distrun/trace/config.h"

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/trace/trace_testing.h"

namespace distrun::trace {
namespace {

using ::testing::ElementsAre;

template <class F>
std::string messageOf(F f, ExitCode expected) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.exitCode(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(TraceConfigTest, OffWithoutTheFolderWhateverElseIsSet) {
  const TraceConfig config = readTraceConfig(MapEnvironment{{"DISTRUN_TRACE_STEPS", "garbage"}});
  EXPECT_FALSE(config.on());
  EXPECT_FALSE(readTraceConfig(MapEnvironment{{"DISTRUN_TRACE", ""}}).on());
}

TEST(TraceConfigTest, ReadsEveryVariable) {
  const TraceConfig config =
      readTraceConfig(MapEnvironment{{"DISTRUN_TRACE", "/tmp/t"},
                                     {"DISTRUN_TRACE_STEPS", "5:9"},
                                     {"DISTRUN_TRACE_MAX_MB", "3"},
                                     {"DISTRUN_TRACE_CLOCK_SKEW_US", "0, 5000000,-2.5"}});
  EXPECT_EQ(config.folder, "/tmp/t");
  ASSERT_TRUE(config.window);
  EXPECT_EQ(config.window->first, 5);
  EXPECT_EQ(config.window->last, 9);
  EXPECT_EQ(config.maxBytes, uint64_t{3} << 20);
  EXPECT_THAT(config.skewUs, ElementsAre(0, 5000000, -2.5));
  EXPECT_EQ(config.skewOf(1), 5000000);
  EXPECT_EQ(config.skewOf(7), 0);
  EXPECT_EQ(config.skewOf(-1), 0);
}

TEST(TraceConfigTest, DefaultsToEveryStepAndTheDefaultCap) {
  const TraceConfig config = readTraceConfig(MapEnvironment{{"DISTRUN_TRACE", "t"}});
  EXPECT_FALSE(config.window);
  EXPECT_EQ(config.maxBytes, static_cast<uint64_t>(kDefaultMaxMb) << 20);
  EXPECT_TRUE(config.skewUs.empty());
}

TEST(TraceConfigTest, StepWindowHoldsItsBounds) {
  const StepWindow w = parseStepWindow("3:3", "w");
  EXPECT_FALSE(w.contains(2));
  EXPECT_TRUE(w.contains(3));
  EXPECT_FALSE(w.contains(4));
}

TEST(TraceConfigTest, RefusesMalformedWindowsNamingTheVariableAndFlag) {
  const std::string expected =
      ": expected FIRST:LAST, global training steps counted from 1 with FIRST <= LAST (1:100)";
  for (const char* bad : {"5:2", "abc", "0:3", "3", ":4", "2:", "1:2:3", "-1:2", "1.5:2"}) {
    EXPECT_EQ(messageOf([&] { parseStepWindow(bad, std::string("--trace-steps ") + bad); },
                        ExitCode::kUsage),
              std::string("--trace-steps ") + bad + expected);
  }
  EXPECT_EQ(
      messageOf(
          [] {
            readTraceConfig(MapEnvironment{{"DISTRUN_TRACE", "t"}, {"DISTRUN_TRACE_STEPS", "5:2"}});
          },
          ExitCode::kUsage),
      "DISTRUN_TRACE_STEPS=5:2 (--trace-steps)" + expected);
}

TEST(TraceConfigTest, RefusesMalformedCapsAndSkews) {
  for (const char* bad : {"0", "-3", "1.5", "lots", ""}) {
    EXPECT_EQ(messageOf([&] { parseMaxMb(bad, "--trace-max-mb x"); }, ExitCode::kUsage),
              "--trace-max-mb x: expected a whole number of megabytes per file, at least 1")
        << bad;
  }
  EXPECT_EQ(
      messageOf(
          [] {
            readTraceConfig(MapEnvironment{{"DISTRUN_TRACE", "t"}, {"DISTRUN_TRACE_MAX_MB", "0"}});
          },
          ExitCode::kUsage),
      "DISTRUN_TRACE_MAX_MB=0 (--trace-max-mb): expected a whole number of megabytes per "
      "file, at least 1");
  EXPECT_EQ(messageOf(
                [] {
                  readTraceConfig(MapEnvironment{{"DISTRUN_TRACE", "t"},
                                                 {"DISTRUN_TRACE_CLOCK_SKEW_US", "0,soon"}});
                },
                ExitCode::kUsage),
            "DISTRUN_TRACE_CLOCK_SKEW_US=0,soon: expected microseconds per rank, comma-separated "
            "(0,5000000)");
}

TEST(TraceConfigTest, PrepareFolderCreatesItWithItsParents) {
  testing::TempDir dir;
  const std::string folder = dir.file("a/b/trace");
  prepareFolder(folder, kFolderName);
  EXPECT_TRUE(std::filesystem::is_directory(folder));
  EXPECT_TRUE(std::filesystem::is_empty(folder));  // the probe file is gone
  prepareFolder(folder, kFolderName);              // an existing folder is fine
}

TEST(TraceConfigTest, PrepareFolderNamesTheFolderAndTheReason) {
  EXPECT_EQ(messageOf([] { prepareFolder("/dev/null/trace", kFolderName); }, ExitCode::kIo),
            "DISTRUN_TRACE (--trace) /dev/null/trace: cannot create the folder: Not a directory");
}

// /proc/1 takes no new file, from root neither.
TEST(TraceConfigTest, PrepareFolderNamesAFolderItCannotWriteIn) {
  EXPECT_EQ(messageOf([] { prepareFolder("/proc/1", kFolderName); }, ExitCode::kIo)
                .rfind("DISTRUN_TRACE (--trace) /proc/1: cannot create a file in it: ", 0),
            0u);
}

}  // namespace
}  // namespace distrun::trace
