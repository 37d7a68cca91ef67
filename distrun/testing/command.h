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

// Starts `command` with /bin/sh -c "exec COMMAND" in the background, its
// output appended to `logPath`; the returned pid is the command's own.
int startCommand(const std::string& command, const std::string& logPath);

// Waits for a started command; returns its exit code (128+N for signal N).
int waitCommand(int pid);

// True while `pid` exists and is not a zombie.
bool processAlive(int pid);

// This machine's hostname: how reports name a node of a job on it
// ("node 0 (vm)").
std::string thisHostName();

// Waits up to `seconds` for `path` to hold at least `lines` lines.
bool waitForLines(const std::string& path, size_t lines, int seconds);

// The whitespace-separated integers in a file (e.g. pids written by workers).
std::vector<int> readInts(const std::string& path);

// A file's whole contents, byte for byte; "" when it cannot be read.
std::string slurp(const std::string& path);

// Single-quotes `arg` for /bin/sh.
std::string quote(const std::string& arg);

// Path of a built binary (build/bin/NAME) and of a file in the source tree.
std::string binaryPath(const std::string& name);
std::string sourcePath(const std::string& relative);

// Splits text into its non-empty lines.
std::vector<std::string> lines(const std::string& text);

}  // namespace distrun::testing
