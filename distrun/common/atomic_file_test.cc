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

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("distrun_atomic_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all);
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(AtomicFile, WritesAndReplacesLeavingNoTemporary) {
  std::string path = (dir_ / "m.json").string();
  writeFileAtomically(path, "first", "--metrics");
  writeFileAtomically(path, "second", "--metrics");
  EXPECT_EQ(slurp(path), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), {}), 1);
}

TEST_F(AtomicFile, MissingFolderIsAnIoErrorNamingWhatAndPath) {
  std::string path = (dir_ / "no" / "such" / "m.json").string();
  try {
    writeFileAtomically(path, "x", "--metrics");
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kIo);
    std::string what = e.what();
    EXPECT_EQ(what.rfind("--metrics " + path + ": cannot create ", 0), 0) << what;
    EXPECT_NE(what.find("No such file or directory"), std::string::npos);
  }
}

TEST_F(AtomicFile, AFailedWriteLeavesTheOldFileWhole) {
  std::string path = (dir_ / "report.json").string();
  writeFileAtomically(path, "old", "failure report");
  if (::geteuid() == 0) {
    // Root writes through permissions: a folder in place of the
    // temporary file's name makes creating it fail instead.
    fs::create_directory(path + ".tmp." + std::to_string(::getpid()));
  } else {
    fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  }
  EXPECT_THROW(writeFileAtomically(path, "new", "failure report"), IoError);
  EXPECT_EQ(slurp(path), "old");
}

}  // namespace
}  // namespace distrun
