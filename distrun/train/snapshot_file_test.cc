#include "distrun/train/snapshot_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "distrun/common/error.h"
#include "distrun/data/test_files.h"

namespace distrun::train {
namespace {

class SnapshotFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    path_ = dir_ + "/run.snap";
  }

  std::string bytesOf(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void overwrite(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  // The message and exit code of readSnapshotFile(path)'s error.
  std::pair<std::string, ExitCode> readError(const std::string& path) {
    try {
      readSnapshotFile(path);
    } catch (const Error& e) {
      return {e.what(), e.exitCode()};
    }
    return {"no error", ExitCode::kSuccess};
  }

  data::testing::TempDir tmp_;
  std::string dir_, path_;
};

TEST_F(SnapshotFileTest, RoundTripsAndKeepsThePreviousOne) {
  writeSnapshotFile(path_, "first");
  writeSnapshotFile(path_, std::string("second\0with a zero", 18));
  EXPECT_EQ(readSnapshotFile(path_), std::string("second\0with a zero", 18));
  EXPECT_EQ(readSnapshotFile(path_ + ".prev"), "first");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 2);  // no temporary
}

TEST_F(SnapshotFileTest, TruncatedFileIsRefused) {
  writeSnapshotFile(path_, "0123456789");
  const std::string bytes = bytesOf(path_);
  overwrite(path_, bytes.substr(0, bytes.size() - 3));
  EXPECT_EQ(readError(path_), std::make_pair("snapshot " + path_ +
                                                 " is truncated: its header says 10 bytes of "
                                                 "data, the file has 7",
                                             ExitCode::kData));
}

TEST_F(SnapshotFileTest, AlteredByteFailsTheChecksum) {
  writeSnapshotFile(path_, "0123456789");
  std::string bytes = bytesOf(path_);
  bytes[bytes.size() - 1] = 'X';
  overwrite(path_, bytes);
  const auto [message, code] = readError(path_);
  EXPECT_EQ(message.rfind("snapshot " + path_ + " is corrupt: CRC-32 of its data is ", 0), 0u)
      << message;
  EXPECT_EQ(code, ExitCode::kData);
}

TEST_F(SnapshotFileTest, OtherFilesAreNotSnapshots) {
  overwrite(path_, "PK\x03\x04 a zip file, say");
  EXPECT_EQ(readError(path_), std::make_pair("snapshot " + path_ +
                                                 " is not a distrun snapshot: expected it to "
                                                 "start with 'DRSNAP1' and a 20-byte header",
                                             ExitCode::kData));
}

TEST_F(SnapshotFileTest, UnreadableFileIsAnIoError) {
  EXPECT_EQ(readError(dir_ + "/missing"),
            std::make_pair("snapshot " + dir_ + "/missing: cannot open: No such file or directory",
                           ExitCode::kIo));
}

TEST_F(SnapshotFileTest, LatestIsNothingWithoutFiles) {
  std::ostringstream warnings;
  EXPECT_FALSE(findLatestSnapshot(path_, warnings).has_value());
  EXPECT_EQ(warnings.str(), "");
}

TEST_F(SnapshotFileTest, CorruptLatestFallsBackToThePreviousWithAWarning) {
  writeSnapshotFile(path_, "good");
  writeSnapshotFile(path_, "newer");
  overwrite(path_, bytesOf(path_).substr(0, 22));
  std::ostringstream warnings;
  const auto found = findLatestSnapshot(path_, warnings);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->path, path_ + ".prev");
  EXPECT_EQ(found->payload, "good");
  EXPECT_EQ(warnings.str(), "distrun-train: warning: snapshot " + path_ +
                                " is truncated: its header says 5 bytes of data, the file "
                                "has 2; trying " +
                                path_ + ".prev\n");
}

TEST_F(SnapshotFileTest, CrashBetweenTheRenamesLeavesThePreviousOne) {
  writeSnapshotFile(path_, "good");
  writeSnapshotFile(path_, "newer");
  std::filesystem::remove(path_);  // as if PATH.tmp had not been renamed yet
  std::ostringstream warnings;
  const auto found = findLatestSnapshot(path_, warnings);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->payload, "good");
}

TEST_F(SnapshotFileTest, CorruptWithoutAGoodPreviousIsRefused) {
  writeSnapshotFile(path_, "only");
  overwrite(path_, "garbage");
  std::ostringstream warnings;
  try {
    findLatestSnapshot(path_, warnings);
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "snapshot " + path_ +
                  " is not a distrun snapshot: expected it to start with "
                  "'DRSNAP1' and a 20-byte header, and there is no previous snapshot " +
                  path_ + ".prev: delete " + path_ + " to start afresh");
  }
}

// The message and exit code of writeSnapshotFile(path, ...)'s error.
std::pair<std::string, ExitCode> writeError(const std::string& path, const std::string& payload) {
  try {
    writeSnapshotFile(path, payload);
  } catch (const Error& e) {
    return {e.what(), e.exitCode()};
  }
  return {"no error", ExitCode::kSuccess};
}

TEST_F(SnapshotFileTest, UnwritableFolderIsAnIoError) {
  const std::string path = dir_ + "/no/such/folder/x.snap";
  EXPECT_EQ(writeError(path, "data"),
            std::make_pair("snapshot " + path + ": cannot create " + path + ".tmp." +
                               std::to_string(::getpid()) + ": No such file or directory",
                           ExitCode::kIo));
}

// A write that fails (here: a folder where its temporary file goes) leaves
// the last good snapshot in place as PATH, and nothing else behind.
TEST_F(SnapshotFileTest, AFailedWriteKeepsTheLastGoodSnapshot) {
  writeSnapshotFile(path_, "first");
  writeSnapshotFile(path_, "second");
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
  std::filesystem::create_directory(tmp);
  EXPECT_EQ(writeError(path_, "third"),
            std::make_pair("snapshot " + path_ + ": cannot create " + tmp + ": Is a directory",
                           ExitCode::kIo));
  std::filesystem::remove(tmp);
  EXPECT_EQ(readSnapshotFile(path_), "second");
  std::ostringstream warnings;
  EXPECT_EQ(findLatestSnapshot(path_, warnings)->payload, "second");
  EXPECT_EQ(warnings.str(), "");
}

// A write interrupted by a SIGKILL leaves PATH.tmp.PID: the next start
// removes those of PATH, and nothing else.
TEST_F(SnapshotFileTest, InterruptedWritesAreRemovedAndNamed) {
  writeSnapshotFile(path_, "good");
  for (const char* name : {"run.snap.tmp.123", "run.snap.tmp.77", "run.snap.tmp.x", "run.snap.tmp.",
                           "other.snap.tmp.5", "run.snap.prev"}) {
    overwrite(dir_ + "/" + name, "half");
  }
  std::ostringstream notes;
  removeInterruptedWrites(path_, notes);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    left.push_back(entry.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"other.snap.tmp.5", "run.snap", "run.snap.prev",
                                            "run.snap.tmp.", "run.snap.tmp.x"}));
  EXPECT_NE(notes.str().find("distrun-train: removed " + path_ +
                             ".tmp.123, a snapshot whose write was interrupted\n"),
            std::string::npos);
  EXPECT_NE(notes.str().find(path_ + ".tmp.77"), std::string::npos);
  EXPECT_EQ(readSnapshotFile(path_), "good");
}

TEST_F(SnapshotFileTest, InterruptedWritesInAMissingFolderAreNothing) {
  std::ostringstream notes;
  removeInterruptedWrites(dir_ + "/none/run.snap", notes);
  EXPECT_EQ(notes.str(), "");
}

}  // namespace
}  // namespace distrun::train
