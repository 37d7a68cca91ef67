#pragma once
// For tests: a pipe whose both ends are non-blocking and close-on-exec, so
// a test can fill it or read it empty without hanging.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "distrun/common/unique_fd.h"

namespace distrun::testing {

struct TestPipe {
  UniqueFd read;
  UniqueFd write;
};

inline TestPipe nonBlockingPipe() {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  return TestPipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace distrun::testing
