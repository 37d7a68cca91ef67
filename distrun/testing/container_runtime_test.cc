// distrun's own container runtime against the real tools: mksquashfs makes
// an image, the kernel (as root), squashfuse or unsquashfs make it readable
// once per node, bubblewrap enters it for each program.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/unique_fd.h"
#include "distrun/container/image_file.h"
#include "distrun/container/image_mount.h"
#include "distrun/container/runtime_command.h"
#include "distrun/container/sif.h"
#include "distrun/testing/command.h"
#include "distrun/testing/container_runtime_fixture.h"

namespace distrun::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Each way of mounting, for the bare SquashFS image and (suffix "_sif") the
// same file system in a SIF file, at the partition's offset.
class MountMethodTest : public ContainerRuntimeTest,
                        public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    ContainerRuntimeTest::SetUp();
    if (IsSkipped()) return;
    if (std::string why = cannotUse(method()); !why.empty()) GTEST_SKIP() << why;
    if (!sif()) return;
    std::string sifImage = scratch_.path() + "/image.sif";
    container::writeSif(image_, sifImage, {});
    image_ = sifImage;
  }
  bool sif() const { return GetParam().find("_sif") != std::string::npos; }
  std::string method() const { return GetParam().substr(0, GetParam().find('_')); }
  std::unique_ptr<container::ContainerSession> open() {
    return ContainerRuntimeTest::open(method());
  }
};

TEST_P(MountMethodTest, AProgramSeesTheImagesFilesAndNotTheHosts) {
  auto session = open();
  EXPECT_THAT(session->describe(), HasSubstr(sif() ? "(SIF)" : "(SquashFS)"));
  EXPECT_THAT(session->describe(), HasSubstr(method() == "unpack" ? "mounted by unpack"
                                             : method() == "loop" ? "mounted by loop /dev/loop"
                                                                  : "mounted by squashfuse"));
  // /usr/bin/mksquashfs exists on this host, not in the image.
  WorkerRun run = runWorker(
      session->command({"/bin/sh", "-c",
                        "cat /image-marker /opt/tool.txt; ls /usr/bin/mksquashfs 2>/dev/null; "
                        "echo \"$DISTRUN_CONTAINER $FROM_ENV_SCRIPT $FROM_HOST $(pwd)\""},
                       workDir_),
      {{"FROM_HOST", "passed"}});
  EXPECT_EQ(run.status, 0) << run.err;
  fs::path image = fs::absolute(image_);
  EXPECT_EQ(run.out, "image-only\ntool\n" + image.string() + " yes passed " + workDir_ + "\n");
  EXPECT_THAT(open()->describe(), HasSubstr("joined the node's mount ("));
}

TEST_P(MountMethodTest, FourProcessesOnANodeShareOneMountAndTheLastRemovesIt) {
  constexpr int kTasks = 4;
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  UniqueFd readyRead(ready[0]), readyWrite(ready[1]), goRead(go[0]), goWrite(go[1]);
  std::vector<pid_t> tasks;
  for (int t = 0; t < kTasks; ++t) {
    pid_t pid = ::fork();
    if (pid == 0) {  // srun -n 4 distrun exec --container: one session per task
      goWrite.reset();
      int code = 0;
      try {
        auto session = open();
        [[maybe_unused]] ssize_t n = ::write(readyWrite.get(), "r", 1);
        char c;
        n = ::read(goRead.get(), &c, 1);  // until the test closes it
      } catch (...) {
        code = 1;
      }
      ::_exit(code);
    }
    tasks.push_back(pid);
  }
  readyWrite.reset();
  for (int t = 0; t < kTasks; ++t) {
    char c;
    ASSERT_EQ(::read(readyRead.get(), &c, 1), 1);
  }
  std::vector<std::string> folders;
  for (const auto& entry : fs::directory_iterator(containersFolder())) {
    folders.push_back(entry.path());
  }
  ASSERT_EQ(folders.size(), 1u);
  EXPECT_EQ(mountCount(scratch_.path()), method() == "unpack" ? 0u : 1u);
  EXPECT_TRUE(fs::exists(folders[0] + "/root/image-marker"));
  goWrite.reset();
  for (pid_t pid : tasks) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_EQ(status, 0);
  }
  EXPECT_EQ(mountCount(scratch_.path()), 0u);
  EXPECT_FALSE(fs::exists(folders[0]));
}

INSTANTIATE_TEST_SUITE_P(Ways, MountMethodTest,
                         ::testing::Values("loop", "squashfuse", "unpack", "loop_sif",
                                           "squashfuse_sif", "unpack_sif"),
                         [](const ::testing::TestParamInfo<std::string>& way) {
                           return way.param;
                         });

TEST_F(ContainerRuntimeTest, BindsAreMountedAndReadOnlyIsEnforced) {
  fs::create_directories(scratch_.path() + "/rw");
  fs::create_directories(scratch_.path() + "/ro");
  std::ofstream(scratch_.path() + "/ro/in.txt") << "input\n";
  // /opt exists in the image without data: /opt is rebuilt around the bind.
  auto session = open("", {{scratch_.path() + "/rw", "/opt/data", false},
                           {scratch_.path() + "/ro", "/input", true}});
  WorkerRun run = runWorker(session->command(
      {"/bin/sh", "-c",
       "cat /input/in.txt /opt/tool.txt; touch /opt/data/out.txt; touch /input/no.txt; echo $?"},
      workDir_));
  EXPECT_EQ(run.out, "input\ntool\n1\n");
  EXPECT_THAT(run.err, HasSubstr("Read-only file system"));
  EXPECT_TRUE(fs::exists(scratch_.path() + "/rw/out.txt"));
  EXPECT_FALSE(fs::exists(scratch_.path() + "/ro/no.txt"));
}

TEST_F(ContainerRuntimeTest, DevShmIsTheHostsSoSharedMemoryCollectivesWork) {
  auto session = open();
  std::string name = "distrun-container-test-" + std::to_string(::getpid());
  WorkerRun run = runWorker(
      session->command({"/bin/sh", "-c", "echo from-inside > /dev/shm/" + name}, workDir_));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(slurp("/dev/shm/" + name), "from-inside\n");
  fs::remove("/dev/shm/" + name);
}

TEST_F(ContainerRuntimeTest, TheRootIsReadOnly) {
  auto session = open();
  WorkerRun run =
      runWorker(session->command({"/bin/sh", "-c", "touch /new || touch /opt/new"}, workDir_));
  EXPECT_NE(run.status, 0);
  EXPECT_THAT(run.err, HasSubstr("Read-only file system"));
}

TEST_F(ContainerRuntimeTest, AProgramThatIsNotThereExits127) {
  auto session = open();
  WorkerRun run = runWorker(session->command({"/nonexistent/program"}, workDir_));
  ASSERT_TRUE(WIFEXITED(run.status));
  EXPECT_EQ(WEXITSTATUS(run.status), 127);
  EXPECT_THAT(run.err, HasSubstr("/nonexistent/program"));
}

TEST_F(ContainerRuntimeTest, HostPathSeesIntoTheMountedImage) {
  auto session = open();
  std::optional<std::string> sh = session->hostPath("/bin/sh");
  ASSERT_TRUE(sh);
  EXPECT_THAT(*sh, StartsWith(containersFolder()));
  EXPECT_THAT(*sh, HasSubstr("/root/usr/bin/dash"));
  EXPECT_TRUE(fs::exists(*sh));
  EXPECT_EQ(session->hostPath(workDir_ + "/x"), workDir_ + "/x");
}

// A holder killed with SIGKILL: its mount stays until someone looks.
void killedHolder(const std::function<void()>& open) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  UniqueFd readEnd(ready[0]), writeEnd(ready[1]);
  pid_t pid = ::fork();
  if (pid == 0) {
    open();
    [[maybe_unused]] ssize_t n = ::write(writeEnd.get(), "r", 1);
    ::pause();
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(readEnd.get(), &c, 1), 1);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

TEST_F(ContainerRuntimeTest, TheNextOpenClearsTheMountOfAKilledAgent) {
  killedHolder([&] { open().release(); });
  size_t stale = mountCount(scratch_.path());  // 1; 0 when unpacked
  auto session = open();
  EXPECT_THAT(session->describe(), HasSubstr("mounted by"));  // not "joined"
  EXPECT_EQ(mountCount(scratch_.path()), stale);
  session.reset();
  EXPECT_EQ(mountCount(scratch_.path()), 0u);
  EXPECT_TRUE(fs::is_empty(containersFolder()));
}

TEST_F(ContainerRuntimeTest, OpeningAnotherImageClearsStaleMountsOfOthers) {
  if (std::string why = cannotUse("squashfuse"); !why.empty()) GTEST_SKIP() << why;
  killedHolder([&] { open("squashfuse").release(); });
  ASSERT_EQ(mountCount(scratch_.path()), 1u);
  std::string other = scratch_.path() + "/other.sqfs";
  fs::copy_file(image_, other);
  image_ = other;
  auto session = open("unpack");
  EXPECT_EQ(mountCount(scratch_.path()), 0u);
  EXPECT_EQ(container::cleanStaleMounts(env()), 0);
}

// The pid of the squashfuse daemon serving a mount under `folder`.
pid_t squashfuseDaemon(const std::string& folder) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string cmdline = slurp(entry.path().string() + "/cmdline");
    if (cmdline.find("squashfuse") != std::string::npos &&
        cmdline.find(folder) != std::string::npos) {
      return static_cast<pid_t>(std::stol(entry.path().filename()));
    }
  }
  return -1;
}

TEST_F(ContainerRuntimeTest, AMountWhoseFuseDaemonDiedIsMountedAgain) {
  if (std::string why = cannotUse("squashfuse"); !why.empty()) GTEST_SKIP() << why;
  auto first = open("squashfuse");
  pid_t daemon = squashfuseDaemon(containersFolder());
  ASSERT_GT(daemon, 0);
  ::kill(daemon, SIGKILL);
  ASSERT_TRUE(waitUntilGone(daemon));
  auto second = open("squashfuse");
  EXPECT_THAT(second->describe(), HasSubstr("mounted by squashfuse"));
  WorkerRun run = runWorker(second->command({"/bin/cat", "/image-marker"}, workDir_));
  EXPECT_EQ(run.out, "image-only\n");
  first.reset();
  second.reset();
  EXPECT_EQ(mountCount(scratch_.path()), 0u);
}

TEST_F(ContainerRuntimeTest, AForcedWayThatFailsSaysWhy) {
  container::ImageFile image = container::openImage(image_);
  try {
    container::mountImage(image, scratch_.path() + "/m", container::MountMethod::kSquashfuse,
                          MapEnvironment{{"PATH", "/nonexistent"}});
    FAIL() << "expected SystemError";
  } catch (const SystemError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot mount the container image " + image.path +
                  " on this node: squashfuse: squashfuse is not on PATH: install the Debian "
                  "package squashfuse (DISTRUN_CONTAINER_MOUNT=squashfuse: unset it to try "
                  "every way)");
    EXPECT_EQ(e.exitCode(), ExitCode::kSystem);
  }
}

}  // namespace
}  // namespace distrun::testing
