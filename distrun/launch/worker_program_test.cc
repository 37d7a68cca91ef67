#include "distrun/launch/worker_program.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::launch {
namespace {

// A folder with a bin/ for PATH and a work/ folder the workers run in.
class WorkerProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "worker_program_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_ + "/bin");
    std::filesystem::create_directories(dir_ + "/work");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void file(const std::string& path, bool executable) {
    std::ofstream(dir_ + "/" + path) << "#!/bin/sh\n";
    ::chmod((dir_ + "/" + path).c_str(), executable ? 0755 : 0644);
  }
  std::string bin() const { return dir_ + "/bin"; }
  std::string work() const { return dir_ + "/work"; }

  // The message and exit code locateProgram throws for `c`.
  std::pair<std::string, ExitCode> refusal(AgentConfig c) {
    try {
      locateProgram(c, bin(), work());
    } catch (const Error& e) {
      return {e.what(), e.exitCode()};
    }
    return {"no error", ExitCode::kSuccess};
  }

  static AgentConfig program(std::vector<std::string> argv) {
    AgentConfig c;
    c.program = std::move(argv);
    return c;
  }
  static AgentConfig python(const std::string& interpreter, const std::string& source,
                            const std::string& script) {
    AgentConfig c = program({interpreter, "-u", script});
    c.python = interpreter;
    c.pythonSource = source;
    c.pythonScript = script;
    return c;
  }

  std::string dir_;
};

TEST_F(WorkerProgramTest, ProgramsOnPathOrGivenByPathRunAsWritten) {
  file("bin/train", true);
  file("work/w.sh", true);
  AgentConfig onPath = program({"train", "--lr", "1"});
  locateProgram(onPath, bin(), work());
  EXPECT_EQ(onPath.program.front(), "train") << "execvpe searches PATH itself";
  AgentConfig local = program({"./w.sh"});
  EXPECT_NO_THROW(locateProgram(local, bin(), work()));
}

TEST_F(WorkerProgramTest, ANameInTheWorkingFolderButNotOnPathGetsTheDotSlashHint) {
  file("work/w.sh", true);
  EXPECT_EQ(refusal(program({"w.sh"})),
            std::make_pair(std::string("run: cannot run 'w.sh': not found on PATH (did you mean "
                                       "./w.sh?)"),
                           ExitCode::kNotFound));
  EXPECT_EQ(refusal(program({"pyhton"})),
            std::make_pair(std::string("run: cannot run 'pyhton': not found on PATH"),
                           ExitCode::kNotFound));
}

TEST_F(WorkerProgramTest, PathsThatAreMissingOrNotExecutableAreRefused) {
  file("work/data.txt", false);
  EXPECT_EQ(refusal(program({"./w.sh"})),
            std::make_pair(std::string("run: cannot run './w.sh': No such file or directory"),
                           ExitCode::kNotFound));
  EXPECT_EQ(refusal(program({"./data.txt"})),
            std::make_pair(std::string("run: cannot run './data.txt': Permission denied"),
                           ExitCode::kNotExecutable));
}

TEST_F(WorkerProgramTest, PythonIsFoundOnPathAndNamedWithItsSource) {
  file("bin/python3", true);
  file("work/train.py", false);
  AgentConfig c = python("python3", "the first python3 on PATH", "train.py");
  locateProgram(c, bin(), work());
  EXPECT_EQ(c.python, bin() + "/python3");
  EXPECT_EQ(c.program.front(), bin() + "/python3");
  EXPECT_EQ(describeProgram(c), "distrun: node 0: workers run: " + bin() +
                                    "/python3 -u train.py (Python " + bin() +
                                    "/python3, the first python3 on PATH)\n");
}

TEST_F(WorkerProgramTest, AMissingPythonOrScriptIsRefusedBeforeAnythingStarts) {
  EXPECT_EQ(refusal(python("python3", "the first python3 on PATH", "train.py")).first,
            "run: cannot run Python 'python3' (the first python3 on PATH): not found on PATH; "
            "choose a Python with --python PATH or DISTRUN_PYTHON=PATH");
  EXPECT_EQ(refusal(python("/opt/py/bin/python", "from --python", "train.py")).first,
            "run: cannot run Python '/opt/py/bin/python' (from --python): No such file or "
            "directory; choose a Python with --python PATH or DISTRUN_PYTHON=PATH");
  file("bin/python3", true);
  EXPECT_EQ(refusal(python("python3", "the first python3 on PATH", "trian.py")),
            std::make_pair(std::string("run: cannot find the Python script 'trian.py': No such "
                                       "file or directory"),
                           ExitCode::kNotFound));
  AgentConfig module = python("python3", "from DISTRUN_PYTHON", "");
  EXPECT_NO_THROW(locateProgram(module, bin(), work())) << "-m: no script to find";
}

}  // namespace
}  // namespace distrun::launch
