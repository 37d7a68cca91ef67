#include "distrun/launch/error_file.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace distrun::launch {
namespace {

using ::testing::ElementsAre;

class ErrorFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) / ("error-file-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& text) {
    const std::string path = (dir_ / "error.json").string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

// The record PyTorch 2.x's @record writes (error_handler.record_exception).
TEST_F(ErrorFileTest, ReadsWhatRecordWrites) {
  std::optional<RecordedError> e = readErrorFile(
      write(R"({"message": {"message": "RuntimeError: rank 1 failed on purpose", "extraInfo": )"
            R"({"py_callstack": "Traceback (most recent call last):\n  File \"f.py\", line 3\n)"
            R"(RuntimeError: rank 1 failed on purpose\n", "timestamp": "1764640000"}}})"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "RuntimeError: rank 1 failed on purpose");
  EXPECT_THAT(e->traceback,
              ElementsAre("Traceback (most recent call last):", "  File \"f.py\", line 3",
                          "RuntimeError: rank 1 failed on purpose"));
  EXPECT_EQ(e->timestamp, 1764640000);
}

// The record's timestamp counts seconds; the file's own write time, to the
// millisecond, orders exceptions against failures of other nodes.
TEST_F(ErrorFileTest, GivesTheFilesWriteTimeToTheMillisecond) {
  const std::string path = write(R"({"message": "boom", "timestamp": 7})");
  const auto at = std::filesystem::file_time_type::clock::now() - std::chrono::milliseconds(1234);
  std::filesystem::last_write_time(path, at);
  std::optional<RecordedError> e = readErrorFile(path);
  ASSERT_TRUE(e);
  const long long expected = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::file_clock::to_sys(at).time_since_epoch())
                                 .count();
  EXPECT_EQ(e->writtenMs, expected);
}

TEST_F(ErrorFileTest, ReadsTheFlatRecordOfOtherWriters) {
  std::optional<RecordedError> e = readErrorFile(write(R"({"message": "boom", "timestamp": 7})"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "boom");
  EXPECT_TRUE(e->traceback.empty());
  EXPECT_EQ(e->timestamp, 7);
}

TEST_F(ErrorFileTest, AnAbsentEmptyOrBrokenFileIsNone) {
  EXPECT_FALSE(readErrorFile((dir_ / "absent.json").string()));
  EXPECT_FALSE(readErrorFile(write("")));
  EXPECT_FALSE(readErrorFile(write(R"({"message": {"mess)")));
  EXPECT_FALSE(readErrorFile(write(R"({"other": 1})")));
  EXPECT_FALSE(readErrorFile(write(R"([1, 2])")));
}

}  // namespace
}  // namespace distrun::launch
