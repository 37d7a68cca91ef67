#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "distrun/launch/failure_report.h"

namespace distrun::launch {

// The CPU time (clock ticks of 10 ms) a worker must use between two samples
// to count as progress: the background threads of PyTorch and Gloo use a
// tick now and then while the rank waits in a collective.
constexpr long long kMinProgressTicks = 3;

// One worker at one sample of --hang-timeout (docs/launcher.md, "Hung
// workers"): who it is and its progress counters. A plain value the agent
// builds (WorkerGroup::progress) and the Supervisor judges.
struct WorkerProgress {
  WorkerFailure record;       // rank, pid, host, the time now, the stderr tail so far
  long long cpuTicks = 0;     // CPU time its process group used, in clock ticks
  long long outputBytes = 0;  // bytes it wrote to stdout and stderr
  bool stopped = false;       // a process of its group is stopped by a signal (state T)
  long long reports = 0;      // bytes it wrote to its progress pipe (DISTRUN_PROGRESS_FD)
};

// Whether a worker made progress between two samples (the one rule of
// --hang-timeout, docs/launcher.md "Hung workers"): a worker that reports
// its progress is judged by its reports alone (a rank spinning in a
// collective whose peer is gone burns CPU time); one that never reported,
// by kMinProgressTicks of CPU time and by its output.
bool madeProgress(const WorkerProgress& now, const WorkerProgress& before);

// What one process group used, summed over its processes.
struct GroupUsage {
  long long cpuTicks = 0;  // utime + stime + cutime + cstime
  bool stopped = false;    // one of them is in state T (stopped by a signal)
};

// The fields of one /proc/PID/stat line that progress needs.
struct ProcStat {
  char state = '?';
  int pgrp = 0;
  long long cpuTicks = 0;  // utime + stime + cutime + cstime
};

// Parses a /proc/PID/stat line ("4711 (python3) S 1 4711 ..."; the command
// may hold spaces and parentheses); nullopt when it is not one.
std::optional<ProcStat> parseProcStat(std::string_view line);

// Where the agent measures its workers' CPU time: the seam between the
// agent and /proc. Implementations are thread-safe.
class ProgressProbe {
 public:
  virtual ~ProgressProbe() = default;
  // The usage of each group in `groups` (process group ids); a group with
  // no process left is absent. Never throws: a process that vanishes while
  // it is read is skipped.
  virtual std::map<int, GroupUsage> usage(const std::set<int>& groups) const = 0;
  // Where process `pid`'s threads wait in the kernel, the main thread
  // first, the others counted by wait channel: "hrtimer_nanosleep (main
  // thread), futex_wait_queue x4, ep_poll"; a thread on a CPU is "running".
  // "" when unknown (the process is gone, or the probe cannot tell).
  virtual std::string waitChannels(int pid) const {
    (void)pid;
    return "";
  }
};

// Reads every /proc/PID/stat once per call (1 to 4 ms for 160 processes
// on a busy 2-core machine) and sums the lines of the groups asked for.
class ProcProgressProbe : public ProgressProbe {
 public:
  // `procRoot`: "/proc", or a folder of fake PID/stat files for tests.
  explicit ProcProgressProbe(std::string procRoot = "/proc") : procRoot_(std::move(procRoot)) {}
  std::map<int, GroupUsage> usage(const std::set<int>& groups) const override;
  // From procRoot/PID/task/TID/wchan.
  std::string waitChannels(int pid) const override;

  // One probe of the real /proc for the whole process.
  static const ProgressProbe& system();

 private:
  std::string procRoot_;
};

}  // namespace distrun::launch
