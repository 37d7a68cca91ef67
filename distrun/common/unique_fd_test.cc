#include "distrun/common/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

namespace distrun {
namespace {

bool isOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

int openNull() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

TEST(UniqueFd, ClosesWhenDestroyed) {
  int raw = openNull();
  ASSERT_GE(raw, 0);
  {
    UniqueFd fd(raw);
    EXPECT_TRUE(fd.valid());
  }
  EXPECT_FALSE(isOpen(raw));
}

TEST(UniqueFd, MoveTransfersOwnershipOnce) {
  int raw = openNull();
  UniqueFd a(raw);
  UniqueFd b(std::move(a));
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.get(), raw);
  UniqueFd c;
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  EXPECT_TRUE(isOpen(raw));
  c.reset();
  EXPECT_FALSE(isOpen(raw));
}

TEST(UniqueFd, ReleaseKeepsTheDescriptorOpen) {
  int raw = openNull();
  {
    UniqueFd fd(raw);
    EXPECT_EQ(fd.release(), raw);
  }
  EXPECT_TRUE(isOpen(raw));
  UniqueFd(raw).reset();  // the test owns it now
}

TEST(UniqueFd, ResetClosesTheOldOne) {
  int first = openNull();
  int second = openNull();
  UniqueFd fd(first);
  fd.reset(second);
  EXPECT_FALSE(isOpen(first));
  EXPECT_TRUE(isOpen(second));
}

}  // namespace
}  // namespace distrun
