#include "distrun/common/sigpipe.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

#include "distrun/common/unique_fd.h"

namespace distrun {
namespace {

void onSigpipe(int) {}

// Sets SIGPIPE's action for one test and puts the previous one back.
class SigpipeTest : public ::testing::Test {
 protected:
  void SetUp() override { ::sigaction(SIGPIPE, nullptr, &saved_); }
  void TearDown() override { ::sigaction(SIGPIPE, &saved_, nullptr); }
  static void setHandler(void (*handler)(int)) {
    struct sigaction action {};
    action.sa_handler = handler;
    ::sigaction(SIGPIPE, &action, nullptr);
  }
  static void (*currentHandler())(int) {
    struct sigaction action {};
    ::sigaction(SIGPIPE, nullptr, &action);
    return action.sa_handler;
  }

 private:
  struct sigaction saved_ {};
};

// After it, a write to a pipe nobody reads is EPIPE, not the end of the
// process.
TEST_F(SigpipeTest, TheDefaultActionBecomesIgnoredAndWritesFailWithEpipe) {
  setHandler(SIG_DFL);
  ignoreSigpipe();
  EXPECT_EQ(currentHandler(), SIG_IGN);
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  UniqueFd reader(ends[0]);
  UniqueFd writer(ends[1]);
  reader.reset();
  EXPECT_EQ(::write(writer.get(), "x", 1), -1);
  EXPECT_EQ(errno, EPIPE);
}

TEST_F(SigpipeTest, AHandlerTheProgramInstalledStays) {
  setHandler(onSigpipe);
  ignoreSigpipe();
  EXPECT_EQ(currentHandler(), &onSigpipe);
}

}  // namespace
}  // namespace distrun
