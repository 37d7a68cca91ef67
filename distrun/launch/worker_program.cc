#include "distrun/launch/worker_program.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/process.h"
#include "distrun/common/python_choice.h"
#include "distrun/common/strings.h"

namespace distrun::launch {

namespace {

std::string inFolder(const std::string& folder, const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return (folder.empty() ? std::string(".") : folder) + "/" + path;
}

[[noreturn]] void cannotRun(const std::string& what, int err, const std::string& advice) {
  const ExitCode code = err == ENOENT ? ExitCode::kNotFound : ExitCode::kNotExecutable;
  throw SystemError(code,
                    fmt::format("run: cannot run {}: {}{}", what, std::strerror(err), advice));
}

// A path with '/': it must be there and executable.
void checkPath(const std::string& path, const std::string& what, const std::string& workingDir,
               const std::string& advice) {
  const std::string full = inFolder(workingDir, path);
  if (::access(full.c_str(), F_OK) != 0) cannotRun(what, errno, advice);
  if (!isExecutableFile(full)) cannotRun(what, EACCES, advice);
}

// A name without '/': the PATH entry that holds it.
std::string findName(const std::string& name, const std::string& what, const std::string& path,
                     const std::string& workingDir, const std::string& advice) {
  // As execvpe searches (startProcess's own lookup, from the workers' folder).
  if (std::optional<std::string> found = findProgram(name, path, workingDir)) return *found;
  std::string hint;
  if (::access(inFolder(workingDir, name).c_str(), F_OK) == 0) {
    hint = fmt::format(" (did you mean ./{}?)", name);
  }
  throw SystemError(ExitCode::kNotFound,
                    fmt::format("run: cannot run {}: not found on PATH{}{}", what, hint, advice));
}

std::string locate(const std::string& program, const std::string& what, const std::string& path,
                   const std::string& workingDir, const std::string& advice) {
  if (program.find('/') != std::string::npos) {
    checkPath(program, what, workingDir, advice);
    return program;
  }
  return findName(program, what, path, workingDir, advice);
}

void locatePython(AgentConfig& c, const std::string& path, const std::string& workingDir) {
  const std::string what = describePython({c.python, c.pythonSource});
  const std::string advice = "; choose a Python with --python PATH or DISTRUN_PYTHON=PATH";
  c.python = locate(c.python, what, path, workingDir, advice);
  c.program.front() = c.python;
  if (c.pythonScript.empty()) return;
  if (::access(inFolder(workingDir, c.pythonScript).c_str(), F_OK) != 0) {
    throw SystemError(ExitCode::kNotFound,
                      fmt::format("run: cannot find the Python script '{}': {}", c.pythonScript,
                                  std::strerror(errno)));
  }
}

}  // namespace

void locateProgram(AgentConfig& c, const std::optional<std::string>& pathVariable,
                   const std::string& workingDir) {
  const std::string path = pathVariable.value_or(kDefaultProgramPath);
  if (!c.python.empty()) return locatePython(c, path, workingDir);
  const std::string& program = c.program.front();
  locate(program, "'" + program + "'", path, workingDir, "");
}

std::string describeProgram(const AgentConfig& c) {
  std::string line =
      fmt::format("distrun: node {}: workers run: {}", c.layout.nodeRank, join(c.program, " "));
  if (!c.python.empty()) line += fmt::format(" (Python {}, {})", c.python, c.pythonSource);
  return line + "\n";
}

}  // namespace distrun::launch
