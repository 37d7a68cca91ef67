#include "distrun/container/own_runtime.h"

#include <poll.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"
#include "distrun/container/container_session.h"
#include "distrun/container/image_mount.h"
#include "distrun/container/sandbox_process.h"
#include "distrun/container/test_images.h"
#include "distrun/testing/container_tools.h"

namespace distrun::container {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = SandboxMount::Kind;

TEST(MountKeyTest, IsTheImagesIdentityAndTheSlurmJobStep) {
  ImageFile image;
  image.identity = "2049:1234:4096:1700000000000000000";
  EXPECT_EQ(mountKey(image, MapEnvironment{}), "2049-1234-4096-1700000000000000000");
  EXPECT_EQ(mountKey(image, MapEnvironment{{"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "3"}}),
            "2049-1234-4096-1700000000000000000-job77.3");
}

TEST(MountMethodTest, ComesFromDistrunContainerMount) {
  EXPECT_EQ(mountMethodFrom(MapEnvironment{}), MountMethod::kAuto);
  EXPECT_EQ(mountMethodFrom(MapEnvironment{{"DISTRUN_CONTAINER_MOUNT", "loop"}}),
            MountMethod::kLoop);
  EXPECT_EQ(mountMethodFrom(MapEnvironment{{"DISTRUN_CONTAINER_MOUNT", "squashfuse"}}),
            MountMethod::kSquashfuse);
  EXPECT_EQ(mountMethodFrom(MapEnvironment{{"DISTRUN_CONTAINER_MOUNT", "unpack"}}),
            MountMethod::kUnpack);
  try {
    mountMethodFrom(MapEnvironment{{"DISTRUN_CONTAINER_MOUNT", "fuse"}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "DISTRUN_CONTAINER_MOUNT=fuse: expected auto, loop, squashfuse or unpack (how "
              "distrun's container runtime makes the image readable on a node)");
    EXPECT_EQ(e.exitCode(), ExitCode::kConfig);
  }
}

class HostPathTest : public ::testing::Test {
 protected:
  HostPathTest() : scratch_("host-path"), root_(scratch_.path() + "/root") {
    fs::create_directories(root_ + "/usr/bin");
    fs::create_directories(root_ + "/etc/alternatives");
    fs::create_directory_symlink("usr/bin", root_ + "/bin");
    fs::create_symlink("/usr/bin/python3.11", root_ + "/etc/alternatives/python3");
    fs::create_symlink("/etc/alternatives/python3", root_ + "/usr/bin/python3");
    fs::create_symlink("../../loop", root_ + "/usr/bin/loop");
    std::ofstream(root_ + "/usr/bin/python3.11") << "";
  }
  std::string hostPath(const std::string& path, const std::vector<SandboxMount>& mounts = {}) {
    return hostPathOf(path, root_, mounts);
  }
  testing::ScratchDir scratch_;
  std::string root_;
};

TEST_F(HostPathTest, FollowsTheImagesLinksInsideTheImage) {
  EXPECT_EQ(hostPath("/bin/python3"), root_ + "/usr/bin/python3.11");
  EXPECT_EQ(hostPath("/usr/bin/../bin/./python3"), root_ + "/usr/bin/python3.11");
  EXPECT_EQ(hostPath("/opt/missing"), root_ + "/opt/missing");
  EXPECT_EQ(hostPath("/"), root_);
}

TEST_F(HostPathTest, ALinkLoopLeavesThePathUnresolved) {
  fs::create_symlink("/usr/bin/ping", root_ + "/usr/bin/pong");
  fs::create_symlink("/usr/bin/pong", root_ + "/usr/bin/ping");
  EXPECT_EQ(hostPath("/usr/bin/ping"), root_ + "/usr/bin/ping");
}

TEST_F(HostPathTest, UnderAMountIsTheMountsSourceTheDeepestWinning) {
  std::vector<SandboxMount> mounts = {
      {Kind::kBind, "/scratch/ada", "/data", false, false, ""},
      {Kind::kBind, "/fast/in", "/data/in", false, false, ""},
  };
  EXPECT_EQ(hostPath("/data/x.txt", mounts), "/scratch/ada/x.txt");
  EXPECT_EQ(hostPath("/data/in/y", mounts), "/fast/in/y");
  EXPECT_EQ(hostPath("/database", mounts), root_ + "/database");
}

// A stand-in SquashFS file: enough for openImage, which reads headers only.
std::string fakeSquashfs(const std::string& folder) {
  std::string path = folder + "/t.sqfs";
  test::writeBytes(path, test::fakeSquashfs());
  return path;
}

TEST(ContainerSessionTest, ApptainerOnPathRunsEveryProgramThroughItsExec) {
  testing::ScratchDir scratch("session");
  std::string stub = scratch.path() + "/apptainer";  // a stub proving the choice
  std::ofstream(stub) << "#!/bin/sh\nexit 0\n";
  ::chmod(stub.c_str(), 0755);
  ContainerRequest request{
      fakeSquashfs(scratch.path()), {{"/data", "/data", true}}, RuntimeChoice::kAuto};
  auto session = ContainerSession::open(request, MapEnvironment{{"PATH", scratch.path()}});
  std::vector<std::string> argv = session->command({"true"}, "/w");
  EXPECT_EQ(argv.at(0), stub);
  EXPECT_EQ(argv.at(1), "exec");
  EXPECT_EQ(argv.at(2), "--bind");
  EXPECT_EQ(argv.at(3), "/data:/data:ro");
  EXPECT_EQ(argv.back(), "true");
  EXPECT_EQ(session->directCommand({"true"}, "/w").argv, argv);
  EXPECT_FALSE(session->directCommand({"true"}, "/w").statusPipe);
  EXPECT_EQ(session->hostPath("/bin/sh"), std::nullopt);
  EXPECT_THAT(session->describe(),
              HasSubstr("(SquashFS): apptainer (" + stub + ") mounts and enters it"));
}

TEST(ContainerSessionTest, AMissingImageIsReportedBeforeTheRuntime) {
  ContainerRequest request{"/nonexistent/x.sif", {}, RuntimeChoice::kApptainer};
  try {
    ContainerSession::open(request, MapEnvironment{{"PATH", "/nonexistent"}});
    FAIL() << "expected ImageError";
  } catch (const ImageError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kNoInput);
  }
}

TEST(ContainerSessionTest, AnAskedForRuntimeMissingFromPathIsAConfigError) {
  testing::ScratchDir scratch("session");
  ContainerRequest request{fakeSquashfs(scratch.path()), {}, RuntimeChoice::kSingularity};
  EXPECT_THROW(ContainerSession::open(request, MapEnvironment{{"PATH", scratch.path()}}),
               ConfigError);
}

TEST(SandboxProcessTest, ShellStatusIsTheCodeOr128PlusTheSignal) {
  EXPECT_EQ(shellStatus(3 << 8), 3);
  EXPECT_EQ(shellStatus(SIGTERM), 128 + SIGTERM);
}

TEST(SandboxProcessTest, TheToolRefusesOtherArguments) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(runSandboxTool({"enter", "x"}), 64);
  EXPECT_EQ(runSandboxTool({"start", "true"}), 64);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("distrun: error: distrun-sandbox: expected 'supervise -- PROGRAM [ARGS]' "
                        "or 'start -- PROGRAM [ARGS]'"));
}

TEST(SandboxProcessTest, StartReportsAProgramItCannotRunAsTheAgentDoes) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(runSandboxTool({"start", "--", "/nonexistent/program"}), 127);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("distrun: error: cannot run '/nonexistent/program': No such file or "
                        "directory"));
}

TEST(SandboxProcessTest, SuperviseReturnsTheStatusStartReportsOrElseTheChilds) {
  // What bwrap would be between them is left out: start reports through the
  // pipe that supervise made, whatever start itself exits with.
  std::string tool = sandboxToolPath();
  int status = superviseChild({tool, "start", "--", "/bin/sh", "-c", "kill -USR2 $$"}, true);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGUSR2);
  status = superviseChild({tool, "start", "--", "/bin/sh", "-c", "kill -USR2 $$"}, false);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGUSR2);
  EXPECT_EQ(superviseChild({"/bin/sh", "-c", "exit 7"}, true), 7 << 8);
}

// distrun enter in a terminal: the program's process group gets the
// terminal for its lifetime, so it reads it (else SIGTTIN would stop it).
TEST(SandboxProcessTest, AProgramInTheForegroundOfATerminalCanReadIt) {
  int terminal = -1;
  pid_t pid = ::forkpty(&terminal, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::_exit(shellStatus(superviseChild({"/bin/sh", "-c", "read x; echo got $x"}, false)));
  }
  UniqueFd owner(terminal);
  ASSERT_EQ(::write(terminal, "hello\n", 6), 6);
  std::string seen;
  while (seen.find("got hello") == std::string::npos) {
    pollfd ready{terminal, POLLIN, 0};
    if (::poll(&ready, 1, 30000) <= 0) break;  // generous; a stopped program never answers
    char buffer[256];
    ssize_t n = ::read(terminal, buffer, sizeof buffer);
    if (n <= 0) break;
    seen.append(buffer, static_cast<size_t>(n));
  }
  EXPECT_THAT(seen, HasSubstr("got hello"));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace distrun::container
