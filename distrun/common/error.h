#pragma once

#include <stdexcept>
#include <string>

#include "distrun/common/exit_code.h"

namespace distrun {

// What every line distrun prints about an error starts with, in every one
// of its programs (docs/errors.md); the launcher recognises a rank's
// relayed error by it (distrun/launch/failure_cause.cc).
inline constexpr const char* kErrorPrefix = "distrun: error: ";

// The root of every error distrun throws on purpose. what() is one line
// that names the input that was wrong and what was expected; exitCode() is
// what the process exits with if the error reaches main(). Errors cross
// threads and processes as values and are re-thrown where work is joined.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode exitCode() const { return code_; }

 private:
  ExitCode code_;
};

// A command-line flag or argument is wrong.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& m) : Error(ExitCode::kUsage, m) {}
};

// The environment, a hostlist, a site profile or another configuration
// input is wrong or contradicts itself.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& m) : Error(ExitCode::kConfig, m) {}
};

// A data file (dataset, snapshot) has the wrong format or content.
class DataError : public Error {
 public:
  explicit DataError(const std::string& m) : Error(ExitCode::kData, m) {}
};

// A file could not be opened, read or written.
class IoError : public Error {
 public:
  explicit IoError(const std::string& m) : Error(ExitCode::kIo, m) {}
};

// A peer or a child did not answer within its deadline.
class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& m) : Error(ExitCode::kTimeout, m) {}
};

// Rendezvous failed: wrong token, peers that disagree, a missing node.
class RendezvousError : public Error {
 public:
  explicit RendezvousError(const std::string& m) : Error(ExitCode::kRendezvous, m) {}
};

// A communication peer was lost: it died or closed its connections during
// a collective. The message names the peer (rank, host, pid).
class CommunicationError : public Error {
 public:
  explicit CommunicationError(const std::string& m) : Error(ExitCode::kPeerLost, m) {}
};

// A system call failed. The message names the call, what it was called on,
// and strerror(errno).
class SystemError : public Error {
 public:
  SystemError(const std::string& call, const std::string& what, int err);
  SystemError(ExitCode code, const std::string& message) : Error(code, message) {}
  int errorNumber() const { return errno_; }

 private:
  int errno_ = 0;
};

// A broken invariant inside distrun (thrown by DISTRUN_ENFORCE*): a bug.
class EnforceError : public Error {
 public:
  explicit EnforceError(const std::string& m) : Error(ExitCode::kInternal, m) {}
};

// An error whose one line this process has already printed: a rank that
// repeats rank 0's error says so before rank 0 ends (and its launcher
// stops the others), not after. main() returns its exit code and prints
// nothing more.
class ReportedError : public Error {
 public:
  ReportedError(ExitCode code, const std::string& m) : Error(code, m) {}
};

// The exit code for any exception that reaches main(): an Error's own code,
// kInternal for everything else.
ExitCode exitCodeFor(const std::exception& e);

}  // namespace distrun
