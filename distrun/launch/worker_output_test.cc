#include "distrun/launch/worker_output.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/system.h"

namespace distrun::launch {
namespace {

TEST(StreamSpecTest, ParsesTorchrunForms) {
  EXPECT_EQ(streamBits(parseStreamSpec("3", "--tee"), 5), 3);
  auto spec = parseStreamSpec("0:1,2:3", "--redirects");
  EXPECT_EQ(streamBits(spec, 0), 1);
  EXPECT_EQ(streamBits(spec, 1), 0);
  EXPECT_EQ(streamBits(spec, 2), 3);
  try {
    parseStreamSpec("4", "--tee");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "--tee '4': expected 0-3 (0 none, 1 stdout, 2 stderr, 3 both) "
                 "or a map like '0:3,1:2'");
  }
  EXPECT_THROW(parseStreamSpec("0:9", "--tee"), UsageError);
  EXPECT_THROW(parseStreamSpec(":1", "--tee"), UsageError);
}

TEST(PrefixTest, ExpandsFields) {
  EXPECT_EQ(expandPrefix("[{node}:{rank}] ", 1, 5, 2, "default", "n1"), "[1:5] ");
  EXPECT_EQ(expandPrefix("{host}/{role}{local_rank}: ", 0, 0, 3, "trainer", "gpu01"),
            "gpu01/trainer3: ");
  EXPECT_THROW(expandPrefix("{nodes}", 0, 0, 0, "", ""), UsageError);
}

class WorkerOutputTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ::testing::TempDir() + "wo_" + std::to_string(::getpid()); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string read(const std::string& name) {
    return readTextFile(dir_ + "/" + name, "worker log");
  }
  std::string dir_;
};

TEST_F(WorkerOutputTest, FilesGetRawLinesAndTailKeepsLastStderr) {
  StreamRoute route{false, false, true, true};
  {
    WorkerOutput out("[0:1] ", route, dir_);
    out.onStdout("hel");
    out.onStdout("lo\nwor");
    for (int i = 0; i < 25; ++i) out.onStderr("e" + std::to_string(i) + "\n");
    out.onStderr("last, unterminated");
    out.finish();
    ASSERT_EQ(out.stderrTail().size(), WorkerOutput::kTailLines);
    EXPECT_EQ(out.stderrTail().front(), "e6");
    EXPECT_EQ(out.stderrTail().back(), "last, unterminated");
  }
  EXPECT_EQ(read("stdout.log"), "hello\nwor\n");
  EXPECT_THAT(read("stderr.log"), ::testing::StartsWith("e0\ne1\n"));
}

TEST_F(WorkerOutputTest, NoFilesUnlessAsked) {
  { WorkerOutput out("p ", StreamRoute{false, false, false, false}, dir_); }
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/stdout.log"));
}

// A log folder that cannot be made is named with the real reason (here a
// file where a folder should be; for another user's folder, "Permission
// denied"), not the "No such file or directory" of the file under it.
TEST_F(WorkerOutputTest, AFolderThatCannotBeMadeIsNamedWithItsReason) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ + "/logs") << "not a folder";
  const std::string folder = dir_ + "/logs/run/attempt_0/0";
  try {
    WorkerOutput out("p ", StreamRoute{false, false, true, false}, folder);
    FAIL() << "made " << folder;
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot make the worker log folder '" + folder +
                  "': Not a directory (--log-dir: a folder this user can write)");
  }
}

// torchrun 2.x's --duplicate-stdout-filters: every worker's matching lines,
// with their prefix, in one file; ",," is a comma.
TEST_F(WorkerOutputTest, FilteredCopiesTakeTheMatchingLinesOfEveryWorker) {
  EXPECT_THAT(parseDuplicateFilters("loss,apple,,pear,"),
              ::testing::ElementsAre("loss", "apple,pear"));
  EXPECT_TRUE(parseDuplicateFilters("").empty());
  {
    FilteredCopy copy(parseDuplicateFilters("loss,a,,b"), dir_ + "/filtered_stdout.log");
    WorkerOutput first("[0:0] ", StreamRoute{false, false, false, false}, dir_);
    WorkerOutput second("[0:1] ", StreamRoute{false, false, false, false}, dir_);
    first.setFilteredCopies(&copy, nullptr);
    second.setFilteredCopies(&copy, nullptr);
    first.onStdout("loss 1.5\nstep 3\n");
    second.onStdout("a,b here\n");
    second.onStderr("loss on stderr\n");
  }
  EXPECT_EQ(read("filtered_stdout.log"), "[0:0] loss 1.5\n[0:1] a,b here\n");
}

}  // namespace
}  // namespace distrun::launch
