#pragma once

namespace distrun {

// Every exit status distrun itself chooses. Mapped from errors only in the
// apps' main.cc (see docs/errors.md). The values follow BSD sysexits where
// one fits, so they stay clear of the small codes user programs return;
// `distrun exec` and `distrun run` otherwise exit with the program's own code.
enum class ExitCode : int {
  kSuccess = 0,
  kUsage = 64,       // a flag or argument is wrong (EX_USAGE)
  kData = 65,        // a data file, snapshot or image is malformed (EX_DATAERR)
  kNoInput = 66,     // an input file (a container image) is missing (EX_NOINPUT)
  kPeerLost = 69,    // a peer of a collective died or closed (EX_UNAVAILABLE)
  kInternal = 70,    // a distrun invariant broke: a bug (EX_SOFTWARE)
  kSystem = 71,      // the operating system refused a call (EX_OSERR)
  kIo = 74,          // a file could not be read or written (EX_IOERR)
  kTimeout = 75,     // a peer did not answer in time (EX_TEMPFAIL)
  kRendezvous = 76,  // peers disagreed or refused us (EX_PROTOCOL)
  kConfig = 78,      // environment, hostlist or profile is wrong (EX_CONFIG)
  // Not an error: the job wrote a snapshot on SIGUSR1 (Slurm's warning
  // before the time limit or a preemption) and asks to be requeued. Workers
  // (distrun-train, any program joining the protocol) exit with it, the
  // agent passes it on, and the batch script requeues the job on it.
  kCheckpointed = 79,
  // `distrun doctor`: a check failed on some node (or a node did not answer);
  // the report names it. Warnings alone exit 0.
  kCheckFailed = 80,
  kNotExecutable = 126,  // the program exists but cannot be run (as a shell)
  kNotFound = 127,       // the program does not exist (as a shell)
};

constexpr int toInt(ExitCode code) { return static_cast<int>(code); }

}  // namespace distrun
