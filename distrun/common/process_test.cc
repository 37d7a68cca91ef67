#include "distrun/common/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A folder of its own for each test, removed after it.
class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("distrun-process-test-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::string file(const std::string& name) const { return (folder_ / name).string(); }

  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  void writeProgram(const std::string& path, const std::string& text, bool executable = true) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), executable ? 0755 : 0644);
  }

  // Runs `spec` with its standard output and error into files of the
  // folder; returns its exit, and sets out_ and err_.
  int run(ProcessSpec spec) {
    spec.descriptors.push_back({.target = 1, .path = file("out"), .openFlags = kWrite});
    spec.descriptors.push_back({.target = 2, .path = file("err"), .openFlags = kWrite});
    const int exit = waitForProcess(startProcess(spec));
    out_ = read(file("out"));
    err_ = read(file("err"));
    return exit;
  }

  static constexpr int kWrite = O_WRONLY | O_CREAT | O_TRUNC;
  fs::path folder_;
  std::string out_, err_;
};

TEST_F(ProcessTest, RunsAProgramOnThePathWithItsArgumentsAndGivesItsExit) {
  EXPECT_EQ(run({.argv = {"sh", "-c", "echo \"$0 $1\"; exit 3", "a", "b"}}), 3);
  EXPECT_EQ(out_, "a b\n");
}

TEST_F(ProcessTest, ASignalledProgramIs128PlusTheSignal) {
  EXPECT_EQ(run({.argv = {"sh", "-c", "kill -9 $$"}}), 137);
}

TEST_F(ProcessTest, AMissingProgramExits127AndSaysSoWhenAsked) {
  EXPECT_EQ(run({.argv = {"distrun-no-such-program"}}), 127);
  EXPECT_EQ(err_, "");
  EXPECT_EQ(run({.argv = {"distrun-no-such-program"}, .explainExecFailure = true}), 127);
  EXPECT_EQ(err_,
            "distrun: error: cannot run 'distrun-no-such-program': No such file or directory\n");
  EXPECT_EQ(run({.argv = {file("nothing-here")}}), 127);
}

TEST_F(ProcessTest, AFileThatIsNotExecutableExits126) {
  writeProgram(file("plain"), "echo hi\n", /*executable=*/false);
  EXPECT_EQ(run({.argv = {file("plain")}, .explainExecFailure = true}), 126);
  EXPECT_THAT(err_, HasSubstr("cannot run '" + file("plain") + "': Permission denied"));
}

// As execvp: a script without #! is run by /bin/sh, with its arguments.
TEST_F(ProcessTest, AScriptWithoutAnInterpreterLineRunsInTheShell) {
  writeProgram(file("script"), "echo \"script $1\"\nexit 4\n");
  EXPECT_EQ(run({.argv = {file("script"), "one"}}), 4);
  EXPECT_EQ(out_, "script one\n");
}

TEST_F(ProcessTest, TheEnvironmentGivenIsTheWholeEnvironment) {
  ::setenv("DISTRUN_PROCESS_TEST_INHERITED", "1", 1);
  EXPECT_EQ(run({.argv = {"sh", "-c", "echo \"$ONLY/${DISTRUN_PROCESS_TEST_INHERITED:-unset}\""},
                 .environment = std::vector<std::string>{"ONLY=this", "PATH=/usr/bin:/bin"}}),
            0);
  EXPECT_EQ(out_, "this/unset\n");
  EXPECT_EQ(run({.argv = {"sh", "-c", "echo $DISTRUN_PROCESS_TEST_INHERITED"}}), 0);
  EXPECT_EQ(out_, "1\n");
  ::unsetenv("DISTRUN_PROCESS_TEST_INHERITED");
}

// The program is looked up on the PATH of its own environment when asked,
// else on this process's.
TEST_F(ProcessTest, LooksTheProgramUpOnThePathItIsTold) {
  fs::create_directories(file("bin"));
  writeProgram(file("bin/distrun-process-test-tool"), "#!/bin/sh\necho found\n");
  const std::vector<std::string> environment{"PATH=" + file("bin")};
  EXPECT_EQ(run({.argv = {"distrun-process-test-tool"},
                 .environment = environment,
                 .pathOfItsEnvironment = true}),
            0);
  EXPECT_EQ(out_, "found\n");
  EXPECT_EQ(run({.argv = {"distrun-process-test-tool"}, .environment = environment}), 127);
}

TEST_F(ProcessTest, PutsDescriptorsWhereTheyAreAsked) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const int exit =
      run({.argv = {"sh", "-c", "echo to-five >&5; exec 5>&-; cat /dev/stdin"},
           .descriptors = {{.target = 5, .source = fds[1]}, {.target = 0, .path = "/dev/null"}}});
  ::close(fds[1]);
  char text[64] = {};
  const ssize_t n = ::read(fds[0], text, sizeof(text) - 1);
  ::close(fds[0]);
  EXPECT_EQ(exit, 0);
  EXPECT_EQ(std::string(text, static_cast<size_t>(std::max<ssize_t>(n, 0))), "to-five\n");
  EXPECT_EQ(out_, "");
}

// A descriptor already at its place is kept open across exec.
TEST_F(ProcessTest, ADescriptorAtItsTargetStaysOpen) {
  const int fd = ::open(file("kept").c_str(), kWrite | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  const std::string write = "echo kept >&" + std::to_string(fd);
  EXPECT_EQ(run({.argv = {"sh", "-c", write}, .descriptors = {{.target = fd, .source = fd}}}), 0);
  EXPECT_EQ(run({.argv = {"sh", "-c", write + " 2>/dev/null || echo closed"}}), 0);
  EXPECT_EQ(out_, "closed\n");
  ::close(fd);
  EXPECT_EQ(read(file("kept")), "kept\n");
}

TEST_F(ProcessTest, AFileThatCannotBeOpenedForTheChildExits126) {
  EXPECT_EQ(
      waitForProcess(startProcess(
          {.argv = {"true"},
           .descriptors = {{.target = 1, .path = file("no/such/folder"), .openFlags = kWrite}}})),
      126);
}

TEST_F(ProcessTest, LeadsItsOwnProcessGroupWhenAsked) {
  const pid_t pid = startProcess({.argv = {"sleep", "30"}, .ownProcessGroup = true});
  EXPECT_EQ(::getpgid(pid), pid);
  ::kill(-pid, SIGKILL);
  EXPECT_EQ(waitForProcess(pid), 137);
  const pid_t inherited = startProcess({.argv = {"sleep", "30"}});
  EXPECT_EQ(::getpgid(inherited), ::getpgrp());
  ::kill(inherited, SIGKILL);
  waitForProcess(inherited);
}

// The signal reaches the child when the thread that started it ends.
TEST_F(ProcessTest, TheParentDeathSignalComesWhenTheStartingThreadEnds) {
  pid_t pid = -1;
  std::thread([&] {
    pid = startProcess({.argv = {"sleep", "30"}, .parentDeathSignal = SIGTERM});
  }).join();
  EXPECT_EQ(waitForProcess(pid), 128 + SIGTERM);
}

// Whether `signal` is in the set of /proc/PID/status line `field` ("SigBlk",
// "SigIgn") that `status` holds.
bool inSet(const std::string& status, const std::string& field, int signal) {
  const size_t at = status.find(field + ":\t");
  if (at == std::string::npos) return false;
  const unsigned long long set = std::stoull(status.substr(at + field.size() + 2, 16), nullptr, 16);
  return ((set >> (signal - 1)) & 1) != 0;
}

// The mask is the starting thread's unless an empty one is asked for; the
// dispositions asked for are reset (an ignored SIGINT stays ignored otherwise).
TEST_F(ProcessTest, SetsTheChildsSignalMaskAndDispositions) {
  // grep itself: a shell empties its mask as it starts.
  const std::vector<std::string> show{"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"};
  sigset_t usr1, saved;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &usr1, &saved);
  const auto savedInt = ::signal(SIGINT, SIG_IGN);
  EXPECT_EQ(run({.argv = show}), 0);
  const std::string inherited = out_;
  EXPECT_EQ(run({.argv = show, .emptySignalMask = true, .defaultSignals = {SIGINT}}), 0);
  ::signal(SIGINT, savedInt);
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  EXPECT_TRUE(inSet(inherited, "SigBlk", SIGUSR1)) << inherited;
  EXPECT_TRUE(inSet(inherited, "SigIgn", SIGINT)) << inherited;
  EXPECT_THAT(out_, HasSubstr("SigBlk:\t0000000000000000")) << out_;
  EXPECT_FALSE(inSet(out_, "SigIgn", SIGINT)) << out_;
}

TEST_F(ProcessTest, GivesTheChildTheCpusAsked) {
  cpu_set_t mine;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(mine), &mine), 0);
  int first = 0;
  while (!CPU_ISSET(first, &mine)) ++first;
  EXPECT_EQ(
      run({.argv = {"sh", "-c", "grep '^Cpus_allowed_list' /proc/self/status"}, .cpus = {first}}),
      0);
  EXPECT_EQ(out_, "Cpus_allowed_list:\t" + std::to_string(first) + "\n");
}

TEST(WaitForProcessTest, AProcessThatIsNotAChildIsASystemError) {
  EXPECT_THROW(waitForProcess(1), SystemError);
}

TEST(FindProgramTest, SearchesEachFolderOfThePathInOrder) {
  EXPECT_EQ(findProgram("sh", "/nonexistent:/bin:/usr/bin"), "/bin/sh");
  EXPECT_EQ(findProgram("sh", "/nonexistent"), std::nullopt);
  EXPECT_EQ(findProgram("./relative/tool", ""), "./relative/tool");
  EXPECT_EQ(findProgram("", "/bin"), std::nullopt);
  EXPECT_EQ(findProgram("passwd", "/etc"), std::nullopt);  // not executable
  EXPECT_EQ(findProgram("bin", "/"), std::nullopt);        // a folder
}

// A relative PATH folder is taken from the working folder given, and the
// path comes back as PATH gives it.
TEST(FindProgramTest, TakesRelativeFoldersFromTheWorkingFolder) {
  EXPECT_EQ(findProgram("sh", "bin", "/"), "bin/sh");
  EXPECT_EQ(findProgram("sh", "bin", "/nonexistent"), std::nullopt);
  EXPECT_EQ(findProgram("sh", "/bin", "/nonexistent"), "/bin/sh");
}

}  // namespace
}  // namespace distrun
