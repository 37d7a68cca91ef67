// `distrun run` with a real Python that lacks torch (label: python; it
// starts no Slurm): the failure report names the interpreter, where it came
// from, and ends with how to choose another. The Python is /usr/bin/python3
// behind a wrapper that runs it with -S (no site-packages), so
// `import torch` fails wherever torch is installed.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/testing/command.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;

constexpr const char* kAdvice =
    "cannot import 'torch': install it for that Python, or choose another with --python PATH "
    "or DISTRUN_PYTHON=PATH";

class LauncherPythonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
    dir_ = ::testing::TempDir() + "launcher_python_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_ + "/bin");
    write("bin/python3", "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n", 0755);
    write("ddp.py", "import torch\n", 0644);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& name, const std::string& text, mode_t mode) {
    std::ofstream(dir_ + "/" + name) << text;
    ::chmod((dir_ + "/" + name).c_str(), mode);
  }
  // `distrun run -v ... ddp.py` in the test's folder, with `prefix` first.
  CommandResult run(const std::string& prefix, const std::string& flags) {
    return runCommand("cd " + quote(dir_) + " && " + prefix + " timeout 120 " +
                      quote(binaryPath("distrun")) + " run -v " + flags + " ddp.py");
  }
  std::string python() const { return dir_ + "/bin/python3"; }

  std::string dir_;
};

TEST_F(LauncherPythonTest, FromThePythonFlag) {
  CommandResult r = run("", "--python " + quote(python()));
  EXPECT_EQ(r.exitCode, 1) << r.err;
  const std::string how = python() + " (from --python)";
  EXPECT_THAT(r.err, HasSubstr("distrun: node 0: workers run: " + python() + " -u ddp.py (Python " +
                               python() + ", from --python)\n"));
  EXPECT_THAT(r.err, HasSubstr("distrun: rank 0 ran Python " + how + "\n"));
  EXPECT_THAT(r.err, HasSubstr("ModuleNotFoundError: No module named 'torch'"));
  EXPECT_EQ(lines(r.err).back(), "distrun: Python " + how + " " + kAdvice);
}

TEST_F(LauncherPythonTest, FromDistrunPython) {
  CommandResult r = run("DISTRUN_PYTHON=" + quote(python()), "");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_EQ(lines(r.err).back(),
            "distrun: Python " + python() + " (from DISTRUN_PYTHON) " + kAdvice);
}

TEST_F(LauncherPythonTest, TheFirstPython3OnPath) {
  CommandResult r = run("PATH=" + quote(dir_ + "/bin") + ":\"$PATH\"", "");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("(Python " + python() + ", the first python3 on PATH)\n"));
  EXPECT_EQ(lines(r.err).back(),
            "distrun: Python " + python() + " (the first python3 on PATH) " + kAdvice);
}

}  // namespace
}  // namespace distrun::testing
