#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace distrun::launch {

// A worker that failed, anywhere in the job; the root cause among them
// (supervisor.h) is what every agent reports and exits with. A plain value
// that crosses nodes as JSON.
struct WorkerFailure {
  int rank = -1;
  int localRank = -1;
  int nodeRank = -1;
  std::string host;
  int pid = 0;
  int exitCode = 0;        // when it exited
  int signal = 0;          // when a signal killed it (0: it exited)
  std::string time;        // UTC, ISO 8601
  long long exitedMs = 0;  // when its agent reaped it, ms since the epoch (0: unknown)
  std::vector<std::string> stderrTail;
  // What PyTorch's @record wrote to the worker's TORCHELASTIC_ERROR_FILE
  // (error_file.h): the exception's own words and traceback, and its time
  // (seconds since the epoch; 0: no error file), which orders failures.
  std::string errorMessage;
  std::vector<std::string> errorTraceback;
  long long errorTimestamp = 0;
  long long errorWrittenMs = 0;  // the error file's last write, ms since the epoch
  // For a Python program, the Python that ran it and where it came from:
  // "/usr/bin/python3 (the first python3 on PATH)". Empty otherwise.
  std::string python;
  // A hung worker (--hang-timeout; docs/launcher.md, "Hung workers"): it
  // made no progress for hungSeconds (0: it did not hang, it exited) by the
  // limit of hangTimeout seconds, whether a signal had stopped it, and
  // whether progress meant its own reports (DISTRUN_PROGRESS_FD) rather
  // than CPU time and output.
  double hungSeconds = 0;
  double hangTimeout = 0;
  bool stopped = false;
  bool reportsProgress = false;

  // Where a hung worker's threads waited in the kernel at the last sample
  // that saw it idle (/proc/PID/task/TID/wchan, ProgressProbe):
  // "hrtimer_nanosleep (main thread), futex_wait_queue x4"; "" unknown.
  std::string waits;
  // A rank of this node that had raised (its TORCHELASTIC_ERROR_FILE held
  // its exception) while still running when this one failed: this failure
  // came after that one, and because of it, whatever its code; -1: none.
  int afterRaiseOf = -1;

  bool hung() const { return hungSeconds > 0; }
  // What the agent exits with: 75 (ExitCode::kTimeout) for a hung worker,
  // else the worker's code, or 128 + signal.
  int agentExitCode() const;
  // "exit code 3", "signal 9", "no progress for 31 s": for one-line reports.
  std::string cause() const;
  std::string toJson() const;
  // Throws RendezvousError when `json` is not a failure record.
  static WorkerFailure fromJson(const std::string& json);
};

// "SIGTERM" for 15; the number when the signal has no name.
std::string signalName(int signal);

// The current time as "2026-11-21T12:03:04Z".
std::string utcNow();

// Writes the human report: one header, the root cause, the Python that ran
// (for a Python program), the exception its error file recorded with its
// traceback, else the stderr tail; when the tail shows a Python
// import that failed (ModuleNotFoundError), a last line naming the Python
// and how to choose another.
// `restart` is the round that failed (TORCHELASTIC_RESTART_COUNT, 0 for the
// first), of `maxRestarts`; `logFolder`, when not empty, is where the
// failed rank's files are (on its host), and the report names it.
void printFailureReport(const WorkerFailure& failure, const std::string& runId, int restart,
                        int maxRestarts, const std::string& logFolder, std::ostream& out);

}  // namespace distrun::launch
