#include "distrun/testing/command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "distrun/common/process.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"
#include "distrun/common/unique_fd.h"
#include "distrun/common/wait_status.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::testing {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandResult runCommand(const std::string& command) {
  char errPath[] = "/tmp/distrun-test-stderr-XXXXXX";
  UniqueFd(::mkstemp(errPath)).reset();  // the shell below writes it
  std::string full = "( " + command + " ) 2>" + errPath;
  CommandResult result;
  FILE* pipe = ::popen(full.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    result.out.append(buffer, n);
  }
  result.exitCode = shellStatus(::pclose(pipe));
  result.err = slurp(errPath);
  ::unlink(errPath);
  return result;
}

int startCommand(const std::string& command, const std::string& logPath) {
  return startProcess(
      {.argv = {"/bin/sh", "-c", "exec " + command + " >>" + shellQuote(logPath) + " 2>&1"}});
}

int waitCommand(int pid) { return waitForProcess(pid); }

bool processAlive(int pid) { return !processExited(pid); }

std::string thisHostName() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

bool waitForLines(const std::string& path, size_t count, int seconds) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (lines(slurp(path)).size() >= count) return true;
    ::usleep(50000);
  }
  return false;
}

std::vector<int> readInts(const std::string& path) {
  std::vector<int> out;
  std::istringstream in(slurp(path));
  int v;
  while (in >> v) out.push_back(v);
  return out;
}

std::string quote(const std::string& arg) { return shellQuote(arg); }

std::string binaryPath(const std::string& name) {
  return std::string(DISTRUN_BINARY_DIR) + "/bin/" + name;
}

std::string sourcePath(const std::string& relative) {
  return std::string(DISTRUN_SOURCE_DIR) + "/" + relative;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& line : split(text, '\n')) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace distrun::testing
