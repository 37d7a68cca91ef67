#pragma once

#include <string>
#include <vector>

namespace distrun::testing {

// What a finished shell command left behind.
struct CommandResult {
  int exitCode = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs `command` with /bin/sh -c and waits for it. Never throws for a
// failing command; the caller asserts on the result.
CommandResult runCommand(const std::string& command);

// Single-quotes `arg` for /bin/sh.
std::string quote(const std::string& arg);

// Path of a built binary (build/bin/NAME) and of a file in the source tree.
std::string binaryPath(const std::string& name);
std::string sourcePath(const std::string& relative);

// Splits text into its non-empty lines.
std::vector<std::string> lines(const std::string& text);

}  // namespace distrun::testing
