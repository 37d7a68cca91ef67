#include "distrun/container/node_mount.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/testing/container_tools.h"

namespace distrun::container {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Mounts without mounting: a mount is the folder `root` holding a file
// `image`; every mount and clear is logged (one line each, appended by any
// process) so a test counts them. A mount over a root that exists means two
// users mounted at once: it throws, and the user that sees it fails.
class FakeMountFolder : public MountFolder {
 public:
  explicit FakeMountFolder(std::string log) : log_(std::move(log)) {}
  bool usable(const std::string& root, const std::string&) const override {
    return fs::exists(root + "/image") && !fs::exists(root + "/dead");
  }
  void clear(const std::string& root) override {
    if (fs::exists(root)) append("clear");
    fs::remove_all(root);
    fs::remove_all(root + ".partial");
  }
  MountFunction mounter() {
    return [this](const std::string& root) {
      if (fs::exists(root)) throw SystemError(ExitCode::kSystem, "mounted twice at " + root);
      fs::create_directory(root);
      std::ofstream(root + "/image") << "x";
      append("mount");
      return std::string("fake");
    };
  }
  int count(const std::string& what) const {
    std::ifstream in(log_);
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line == what ? 1 : 0;
    return n;
  }

 private:
  void append(const std::string& line) const {
    UniqueFd fd(::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600));
    std::string text = line + "\n";
    [[maybe_unused]] ssize_t n = ::write(fd.get(), text.data(), text.size());
  }
  std::string log_;
};

class NodeMountTest : public ::testing::Test {
 protected:
  NodeMountTest()
      : scratch_("node-mount"),
        base_(scratch_.path() + "/containers"),
        folder_(scratch_.path() + "/log") {
    fs::create_directory(base_);
  }
  std::unique_ptr<NodeMount> join(const std::string& key = "img") {
    return std::make_unique<NodeMount>(base_, key, folder_.mounter(), folder_);
  }

  testing::ScratchDir scratch_;
  std::string base_;
  FakeMountFolder folder_;
};

TEST_F(NodeMountTest, TheFirstUserMountsAndLaterUsersJoin) {
  auto first = join();
  auto second = join();
  EXPECT_TRUE(first->mountedHere());
  EXPECT_FALSE(second->mountedHere());
  EXPECT_EQ(first->root(), base_ + "/img/root");
  EXPECT_EQ(second->root(), first->root());
  EXPECT_EQ(second->how(), "fake");
  EXPECT_EQ(folder_.count("mount"), 1);
}

TEST_F(NodeMountTest, TheLastLeaverUnmountsAndRemovesTheFolder) {
  auto first = join();
  auto second = join();
  first.reset();
  EXPECT_TRUE(fs::exists(base_ + "/img/root/image"));
  second.reset();
  EXPECT_FALSE(fs::exists(base_ + "/img"));
  EXPECT_EQ(folder_.count("clear"), 1);
}

// Runs `body` in a child process, which exits 0, or 1 when it threw.
pid_t forkUser(const std::function<void()>& body) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  int code = 0;
  try {
    body();
  } catch (...) {
    code = 1;
  }
  ::_exit(code);
}

int exitCodeOf(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(NodeMountTest, ProcessesJoiningAndLeavingAtOnceMountOnceAtATime) {
  constexpr int kUsers = 6, kRounds = 25;
  std::vector<pid_t> users;
  for (int u = 0; u < kUsers; ++u) {
    users.push_back(forkUser([&] {
      for (int round = 0; round < kRounds; ++round) {
        auto share = join();
        std::this_thread::sleep_for(std::chrono::microseconds(200 * (round % 3)));
        // Nobody may clear or remount the image while a user holds it.
        if (!fs::exists(share->root() + "/image")) throw std::runtime_error("lost the mount");
      }
    }));
  }
  for (pid_t pid : users) EXPECT_EQ(exitCodeOf(pid), 0);
  EXPECT_FALSE(fs::exists(base_ + "/img"));
  EXPECT_EQ(folder_.count("mount"), folder_.count("clear"));
  EXPECT_GE(folder_.count("mount"), 1);
}

// A user killed with SIGKILL while holding the mount: its share dies with it.
void killedHolder(const std::function<std::unique_ptr<NodeMount>()>& join) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  UniqueFd readEnd(fds[0]), writeEnd(fds[1]);
  pid_t pid = forkUser([&] {
    auto share = join();
    [[maybe_unused]] ssize_t n = ::write(writeEnd.get(), "j", 1);
    ::pause();
  });
  char c;
  EXPECT_EQ(::read(readEnd.get(), &c, 1), 1);
  ::kill(pid, SIGKILL);
  exitCodeOf(pid);
}

TEST_F(NodeMountTest, TheNextJoinerClearsTheMountOfAKilledHolder) {
  killedHolder([&] { return join(); });
  EXPECT_TRUE(fs::exists(base_ + "/img/root/image"));  // left behind
  auto share = join();
  EXPECT_TRUE(share->mountedHere());
  EXPECT_EQ(folder_.count("clear"), 1);
  EXPECT_EQ(folder_.count("mount"), 2);
}

TEST_F(NodeMountTest, CleanStaleMountsRemovesUnusedFoldersOnly) {
  killedHolder([&] { return join("stale"); });
  auto live = join("live");
  EXPECT_EQ(cleanStaleMounts(base_, folder_), 1);
  EXPECT_FALSE(fs::exists(base_ + "/stale"));
  EXPECT_TRUE(fs::exists(base_ + "/live/root/image"));
  EXPECT_EQ(cleanStaleMounts(base_, folder_, "live"), 0);
}

TEST_F(NodeMountTest, CleanStaleMountsSkipsAFolderBeingMounted) {
  killedHolder([&] { return join("busy"); });
  UniqueFd gate(::open((base_ + "/busy/gate").c_str(), O_RDWR));
  ASSERT_EQ(::flock(gate.get(), LOCK_EX), 0);
  EXPECT_EQ(cleanStaleMounts(base_, folder_), 0);
  gate.reset();
  EXPECT_EQ(cleanStaleMounts(base_, folder_), 1);
}

TEST_F(NodeMountTest, AMountThatNoLongerServesIsMountedAgainForItsUsers) {
  auto first = join();
  std::ofstream(first->root() + "/dead") << "";  // a FUSE daemon that died
  auto second = join();
  EXPECT_TRUE(second->mountedHere());
  EXPECT_EQ(folder_.count("mount"), 2);
  EXPECT_TRUE(fs::exists(first->root() + "/image"));
}

TEST_F(NodeMountTest, AFailedMountTakesNoShareAndLeavesNoFolder) {
  MountFunction failing = [](const std::string&) -> std::string {
    throw SystemError(ExitCode::kSystem, "cannot mount the container image x: no way");
  };
  try {
    NodeMount share(base_, "img", failing, folder_);
    FAIL() << "expected SystemError";
  } catch (const SystemError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot mount the container image x: no way");
  }
  EXPECT_FALSE(fs::exists(base_ + "/img"));
  EXPECT_TRUE(join()->mountedHere());
}

TEST(NodeMountBaseTest, IsMadeUnderTmpdirForThisUser) {
  testing::ScratchDir tmp("base");
  std::string base = nodeMountBase(MapEnvironment{{"TMPDIR", tmp.path()}});
  EXPECT_EQ(base, tmp.path() + "/distrun-" + std::to_string(::getuid()) + "/containers");
  EXPECT_TRUE(fs::is_directory(base));
  EXPECT_EQ(nodeMountBase(MapEnvironment{{"TMPDIR", tmp.path()}}), base);
}

TEST(NodeMountBaseTest, AFolderOthersMayWriteIsRefused) {
  testing::ScratchDir tmp("base");
  std::string mine = tmp.path() + "/distrun-" + std::to_string(::getuid());
  fs::create_directory(mine);
  ::chmod(mine.c_str(), 0777);
  try {
    nodeMountBase(MapEnvironment{{"TMPDIR", tmp.path()}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              mine + " is not a folder of this user's (uid " + std::to_string(::getuid()) +
                  ") that only it may write: remove it, or set TMPDIR to another folder");
  }
}

}  // namespace
}  // namespace distrun::container
