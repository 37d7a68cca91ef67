// The python check against small shell scripts standing in for Python: the
// real `import torch` is the python label's, not a unit test's.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

namespace fs = std::filesystem;

class PythonCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/python-check-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ctx_.env.set("PATH", dir_ + ":/usr/bin:/bin");
    ctx_.options.timeLimit = std::chrono::seconds(1);
  }

  // Writes an executable script `name` into the test's folder; its path.
  std::string script(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }

  std::string dir_;
  ProbeContext ctx_;
};

TEST_F(PythonCheckTest, APythonWithTorchSaysBothVersions) {
  ctx_.options.python = script("python3", "echo 2.0.1 3.11.2");
  CheckResult r = checkPython(ctx_);
  EXPECT_EQ(r.check, "python");
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "torch 2.0.1, Python 3.11.2: Python '" + *ctx_.options.python + "' (from --python)");
  EXPECT_EQ(r.facts.at("torch_version"), "2.0.1");
  EXPECT_EQ(r.facts.at("python_version"), "3.11.2");
}

TEST_F(PythonCheckTest, RunsWhatTheCheckAsksForInTheTasksEnvironment) {
  // Prints the version only when called as the check calls it, and takes
  // torch's version from the task's environment.
  script("mypython",
         "[ \"$1\" = -c ] || exit 9\n"
         "[ \"$2\" = 'import sys, torch; print(torch.__version__, sys.version.split()[0])' ] "
         "|| exit 9\n"
         "echo 'a warning on stdout first'\n"
         "echo \"$FAKE_TORCH 3.10.12\"");
  ctx_.options.python = "mypython";  // found on the task's PATH
  ctx_.env.set("FAKE_TORCH", "2.1.2+cu121");
  CheckResult r = checkPython(ctx_);
  EXPECT_EQ(r.state, CheckState::kOk) << r.detail;
  EXPECT_EQ(r.detail, "torch 2.1.2+cu121, Python 3.10.12: Python 'mypython' (from --python)");
}

// Without --python the check tests the Python distrun run would choose:
// $DISTRUN_PYTHON, else $PYTHON_EXEC, else python3 on PATH, and says which.
TEST_F(PythonCheckTest, WithoutPythonItIsTheOneDistrunRunChooses) {
  script("python3", "echo 1.13.1 3.11.2");
  script("venv-python", "echo 2.15.0 3.11.2");
  EXPECT_EQ(checkPython(ctx_).detail,
            "torch 1.13.1, Python 3.11.2: Python 'python3' (the first python3 on PATH)");
  ctx_.env.set("PYTHON_EXEC", "venv-python");
  EXPECT_EQ(checkPython(ctx_).detail,
            "torch 2.15.0, Python 3.11.2: Python 'venv-python' (from PYTHON_EXEC)");
  ctx_.env.set("DISTRUN_PYTHON", dir_ + "/venv-python");
  EXPECT_EQ(checkPython(ctx_).detail,
            "torch 2.15.0, Python 3.11.2: Python '" + dir_ + "/venv-python' (from DISTRUN_PYTHON)");
}

TEST_F(PythonCheckTest, APythonWithoutTorchFailsWithItsLastWords) {
  ctx_.options.python = script("python3",
                               "echo 'Traceback (most recent call last):' >&2\n"
                               "echo '  File \"<string>\", line 1, in <module>' >&2\n"
                               "echo \"ModuleNotFoundError: No module named 'torch'\" >&2\n"
                               "echo >&2\n"
                               "exit 1");
  CheckResult r = checkPython(ctx_);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "Python '" + *ctx_.options.python +
                          "' (from --python): ModuleNotFoundError: No module named 'torch'");
  EXPECT_EQ(r.fix,
            "install PyTorch for that Python (pip install torch), or name another: --python "
            "PATH, DISTRUN_PYTHON=PATH or --container IMAGE");
}

TEST_F(PythonCheckTest, AFailureWithoutWordsSaysItsExitCode) {
  ctx_.options.python = script("python3", "exit 3");
  EXPECT_EQ(checkPython(ctx_).detail, "Python '" + *ctx_.options.python +
                                          "' (from --python): -c 'import torch' exited with 3");
}

TEST_F(PythonCheckTest, APythonThatHangsIsEndedAtTheLimit) {
  ctx_.options.python = script("python3", "sleep 60");
  CheckResult r = checkPython(ctx_);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "Python '" + *ctx_.options.python +
                          "' (from --python): -c 'import torch' did not finish within 1 s");
  EXPECT_EQ(r.fix,
            "something under Python hangs (a hung file system holding site-packages, a lock "
            "there): look at `ps -eo pid,stat,wchan,cmd` on the node, or use another: --python "
            "PATH, DISTRUN_PYTHON=PATH or --container IMAGE");
}

TEST_F(PythonCheckTest, NoPythonOnPathIsAWarning) {
  ctx_.options.python = "distrun-no-such-python";
  CheckResult r = checkPython(ctx_);
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "Python 'distrun-no-such-python' (from --python) is not on PATH: fine for distrun "
            "train, not for Python training scripts");
  EXPECT_EQ(r.fix,
            "install Python with PyTorch, or name one: --python PATH, DISTRUN_PYTHON=PATH or "
            "--container IMAGE");
  ctx_.options.python = dir_ + "/bin/python3";
  EXPECT_EQ(checkPython(ctx_).detail,
            "Python '" + dir_ +
                "/bin/python3' (from --python) does not exist: fine for distrun train, not for "
                "Python training scripts");
}

TEST_F(PythonCheckTest, OutputThatIsNoVersionsFails) {
  ctx_.options.python = script("python3", "echo hello");
  CheckResult r = checkPython(ctx_);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "Python '" + *ctx_.options.python +
                          "' (from --python) printed 'hello' where the versions of torch and "
                          "Python were expected");
}

TEST_F(PythonCheckTest, WithAContainerImportsInsideItThroughDistrunEnter) {
  ctx_.toolDir = dir_;
  script("distrun", "[ \"$1 $2 $3\" = 'enter img.sif --' ] || exit 9\nshift 3\nexec \"$@\"");
  script("python3", "echo 2.1.0 3.10.12");
  ctx_.options.container = "img.sif";
  CheckResult r = checkPython(ctx_);
  EXPECT_EQ(r.state, CheckState::kOk) << r.detail;
  EXPECT_EQ(r.detail,
            "torch 2.1.0, Python 3.10.12: Python 'python3' (the first python3 on PATH) in "
            "container img.sif");
  EXPECT_EQ(r.facts.at("container"), "img.sif");
}

TEST_F(PythonCheckTest, AContainerWithoutPythonFails) {
  ctx_.toolDir = dir_;
  script("distrun", "echo 'distrun enter: python3: not found in img.sif' >&2\nexit 127");
  ctx_.options.container = "img.sif";
  CheckResult r = checkPython(ctx_);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "Python 'python3' (the first python3 on PATH) in container img.sif: distrun enter: "
            "python3: not found in img.sif");
}

}  // namespace
}  // namespace distrun::doctor
