#include "distrun/common/writable_file.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun {
namespace {

namespace fs = std::filesystem;
using ::testing::StartsWith;

class WritableFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        (fs::temp_directory_path() / ("distrun_writable_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The message and exit code of the check's refusal; "" when it passed.
  static std::string refusal(const std::string& path, uint64_t bytes = 0) {
    try {
      checkFileWritable(path, "--snapshot", bytes);
    } catch (const IoError& e) {
      EXPECT_EQ(e.exitCode(), ExitCode::kIo);
      return e.what();
    }
    return "";
  }

  std::string dir_;
};

TEST_F(WritableFile, AWritableFolderPassesAndIsLeftAsItWas) {
  EXPECT_EQ(refusal(dir_ + "/s.snap", 1024), "");
  EXPECT_TRUE(fs::is_empty(dir_));
  EXPECT_FALSE(fs::exists(dir_ + "/s.snap"));
}

TEST_F(WritableFile, AMissingFolderIsNamed) {
  EXPECT_EQ(refusal(dir_ + "/out/s.snap"), "--snapshot " + dir_ + "/out/s.snap: the folder " +
                                               dir_ +
                                               "/out does not exist: create it, or "
                                               "choose another path");
}

TEST_F(WritableFile, AFileWhereTheFolderShouldBeIsNamed) {
  std::ofstream(dir_ + "/file") << "x";
  EXPECT_EQ(refusal(dir_ + "/file/s.snap"), "--snapshot " + dir_ + "/file/s.snap: " + dir_ +
                                                "/file is not a folder: choose a path in a "
                                                "folder");
}

TEST_F(WritableFile, AFolderInPlaceOfTheFileIsNamed) {
  EXPECT_EQ(refusal(dir_),
            "--snapshot " + dir_ + ": it is a folder: name a file in it (" + dir_ + "/FILE)");
}

// Mode bits do not stop root; the sysfs root refuses new files to anyone.
TEST_F(WritableFile, AFolderThatRefusesNewFilesIsNamed) {
  if (!fs::is_directory("/sys")) GTEST_SKIP() << "no /sys";
  EXPECT_THAT(refusal("/sys/s.snap"),
              StartsWith("--snapshot /sys/s.snap: cannot create a file in /sys: "));
  EXPECT_THAT(refusal("/sys/s.snap"), ::testing::EndsWith(": choose a folder you can write to"));
}

TEST_F(WritableFile, TooLittleFreeSpaceIsNamedWithBothSizes) {
  const uint64_t all = std::numeric_limits<uint64_t>::max();
  const std::string message = refusal(dir_ + "/s.snap", all);
  EXPECT_THAT(message, StartsWith("--snapshot " + dir_ + "/s.snap: " + dir_ + " has "));
  EXPECT_THAT(message, ::testing::HasSubstr(" MiB free, writing it needs about "));
  EXPECT_THAT(message, ::testing::EndsWith(" MiB: free some space, or choose another folder"));
}

TEST_F(WritableFile, ABareFileNameIsInTheCurrentFolder) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_);
  EXPECT_EQ(refusal("s.snap"), "");
  fs::current_path(before);
}

TEST(Mebibytes, OneDecimal) {
  EXPECT_EQ(mebibytes(0), "0.0 MiB");
  EXPECT_EQ(mebibytes(3 * 1024 * 1024 + 512 * 1024), "3.5 MiB");
}

}  // namespace
}  // namespace distrun
