// AtomicOutput: a file written as a stream appears whole under its name or not at all.
#include "distrun/common/atomic_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun {
namespace {

namespace fs = std::filesystem;

class AtomicOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "atomic_output_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  size_t files() const {
    return static_cast<size_t>(
        std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
  static std::string read(const std::string& path) {
    std::ostringstream text;
    text << std::ifstream(path).rdbuf();
    return text.str();
  }

  std::string dir_;
};

TEST_F(AtomicOutputTest, CommitPutsTheWholeFileInPlace) {
  const std::string path = dir_ + "/trace.json";
  std::ofstream(path) << "old";
  {
    AtomicOutput out(path, "-o");
    out.stream() << "new ";
    EXPECT_EQ(read(path), "old");
    out.stream() << "trace";
    out.commit();
  }
  EXPECT_EQ(read(path), "new trace");
  EXPECT_EQ(files(), 1u);
}

TEST_F(AtomicOutputTest, WithoutCommitNothingChangesAndNothingIsLeft) {
  const std::string path = dir_ + "/trace.json";
  std::ofstream(path) << "old";
  {
    AtomicOutput out(path, "-o");
    out.stream() << "half a tr";
  }
  EXPECT_EQ(read(path), "old");
  EXPECT_EQ(files(), 1u);
}

TEST_F(AtomicOutputTest, AFolderThatDoesNotExist) {
  const std::string path = dir_ + "/gone/trace.json";
  try {
    AtomicOutput out(path, "-o");
    FAIL() << "created";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), "-o " + path + ": cannot create " + path + ".tmp." +
                                         std::to_string(::getpid()) +
                                         ": No such file or directory");
    EXPECT_EQ(e.exitCode(), ExitCode::kIo);
  }
}

TEST_F(AtomicOutputTest, ARenameOntoAFolderFailsAndLeavesNothing) {
  const std::string path = dir_ + "/trace.json";
  fs::create_directories(path + "/inside");
  AtomicOutput out(path, "trace");
  out.stream() << "{}";
  try {
    out.commit();
    FAIL() << "renamed";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), "trace " + path + ": cannot rename " + path + ".tmp." +
                                         std::to_string(::getpid()) + " to it: Is a directory");
  }
}

TEST_F(AtomicOutputTest, TheTemporaryFileGoesWithTheFailure) {
  const std::string path = dir_ + "/trace.json";
  fs::create_directories(path + "/inside");
  {
    AtomicOutput out(path, "trace");
    EXPECT_THROW(out.commit(), IoError);
  }
  EXPECT_EQ(files(), 1u);  // the folder in the way only
}

}  // namespace
}  // namespace distrun
