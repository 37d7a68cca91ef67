#include "distrun/common/system.h"

#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/unique_fd.h"

namespace distrun {
namespace {

UniqueFd listenOn(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(::listen(fd.get(), 1), 0);
  return fd;
}

TEST(TcpPortTest, ListenerMakesAPortBusy) {
  int port = pickFreeTcpPort();
  EXPECT_TRUE(tcpPortIsFree(port));
  UniqueFd listener = listenOn(port);
  EXPECT_FALSE(tcpPortIsFree(port));
}

// Below the kernel's ephemeral range: no connect() or bind to port 0 can
// take it before the store that was promised it binds it.
TEST(TcpPortTest, APickedPortLiesBelowTheEphemeralRange) {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 0;
  if (!(range >> first) || first - kFirstPickedPort < 256) {
    GTEST_SKIP() << "this kernel's ephemeral range starts at " << first;
  }
  for (int i = 0; i < 20; ++i) {
    int port = pickFreeTcpPort();
    EXPECT_GE(port, kFirstPickedPort);
    EXPECT_LT(port, first);
  }
}

TEST(TcpPortTest, TimeWaitLeftByAFinishedStoreIsFree) {
  int port = pickFreeTcpPort();
  UniqueFd server = listenOn(port);
  UniqueFd client(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  UniqueFd accepted(::accept(server.get(), nullptr, nullptr));
  server.reset();
  accepted.reset();  // the store side closes first: its port enters TIME_WAIT
  char c;
  EXPECT_EQ(::read(client.get(), &c, 1), 0);
  client.reset();
  EXPECT_TRUE(tcpPortIsFree(port));
}

// This process runs, a child that exited and is not yet reaped is a
// zombie, and once reaped it is gone.
TEST(ProcessStatusTest, RunningZombieAndGone) {
  const auto self = readProcessStatus(::getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->state, 'R');
  EXPECT_EQ(self->parentPid, ::getppid());
  EXPECT_FALSE(processExited(::getpid()));
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  std::optional<ProcessStatus> status;
  for (int i = 0; i < 1000; ++i) {  // until it has exited, up to 10 s
    status = readProcessStatus(child);
    if (status && status->state == 'Z') break;
    ::usleep(10000);
  }
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->state, 'Z');
  EXPECT_EQ(status->parentPid, ::getpid());
  EXPECT_TRUE(processExited(child));  // a zombie
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(readProcessStatus(child).has_value());
  EXPECT_TRUE(processExited(child));
}

// The list is the affinity mask: ascending, counted by readHostFacts, and
// narrowed to one CPU (on a thread of its own, so that the test's mask stays
// whole) it names just that CPU.
TEST(UsableCpusTest, ListsTheAffinityMask) {
  const std::vector<int> all = usableCpus();
  ASSERT_FALSE(all.empty());
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  EXPECT_EQ(readHostFacts().usableCpus, static_cast<int>(all.size()));
  const int last = all.back();
  ASSERT_LT(last, CPU_SETSIZE);
  std::vector<int> narrowed;
  std::thread([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);
    narrowed = usableCpus();
  }).join();
  EXPECT_THAT(narrowed, ::testing::ElementsAre(last));
  EXPECT_EQ(usableCpus(), all);
}

TEST(ExecutablePathTest, IsThisProgramsFile) {
  const std::string path = executablePath("fallback");
  EXPECT_EQ(path.substr(path.rfind('/') + 1), "common_test");
}

TEST(ReadFileIfPresentTest, TheWholeFileOrNothing) {
  const std::string path = ::testing::TempDir() + "/read-if-present-" + std::to_string(::getpid());
  EXPECT_EQ(readFileIfPresent(path), std::nullopt);
  {
    std::ofstream out(path, std::ios::binary);
    out << "two\nlines\n";
  }
  EXPECT_EQ(readFileIfPresent(path), std::optional<std::string>("two\nlines\n"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace distrun
