#include "distrun/common/progress_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "distrun/common/pipe_testing.h"

namespace distrun {
namespace {

using testing::nonBlockingPipe;
using testing::TestPipe;

TEST(ProgressReportTest, TheDescriptorComesFromDistrunProgressFd) {
  EXPECT_EQ(progressFdFrom(MapEnvironment{{"DISTRUN_PROGRESS_FD", "3"}}), 3);
  EXPECT_EQ(progressFdFrom(MapEnvironment{}), std::nullopt);
  for (const char* bad : {"", "x", "3x", "-1", "99999999999"}) {
    EXPECT_EQ(progressFdFrom(MapEnvironment{{"DISTRUN_PROGRESS_FD", bad}}), std::nullopt) << bad;
  }
}

TEST(ProgressReportTest, EachReportIsOneByte) {
  TestPipe pipe = nonBlockingPipe();
  reportProgressTo(pipe.write.get());
  reportProgressTo(pipe.write.get());
  char buffer[8];
  EXPECT_EQ(::read(pipe.read.get(), buffer, sizeof(buffer)), 2);
}

TEST(ProgressReportTest, AFullPipeNeitherBlocksNorFails) {
  TestPipe pipe = nonBlockingPipe();
  const int size = ::fcntl(pipe.write.get(), F_GETPIPE_SZ);
  for (int i = 0; i <= size; ++i) reportProgressTo(pipe.write.get());
  SUCCEED();  // the last report found the pipe full and returned
}

TEST(ProgressReportTest, APipeWithoutReaderIsIgnored) {
  TestPipe pipe = nonBlockingPipe();
  pipe.read.reset();
  reportProgressTo(pipe.write.get());  // EPIPE, no SIGPIPE
  SUCCEED();
}

}  // namespace
}  // namespace distrun
