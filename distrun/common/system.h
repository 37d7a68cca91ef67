#pragma once

#include <optional>
#include <string>
#include <vector>

#include "distrun/common/environment.h"

namespace distrun {

// Facts about this machine that scheduler detection needs, gathered once so
// tests can supply their own.
struct HostFacts {
  std::string hostname;  // gethostname()
  int usableCpus = 1;    // how many usableCpus() lists
};

// The path of this process's executable (/proc/self/exe), or `argv0` when
// it cannot be read: how distrun's programs find their siblings and share/.
std::string executablePath(const char* argv0);

// Reads the facts of the machine this process runs on. Throws SystemError
// when gethostname or sched_getaffinity fails.
HostFacts readHostFacts();

// The CPUs this process may run on (its affinity mask, as taskset, srun's
// --cpu-bind or a cgroup cpuset left it), in ascending order; never empty.
// The one reader of the mask: thread counts and CPU binding start here.
// Throws SystemError when sched_getaffinity fails.
std::vector<int> usableCpus();

// A process's state letter ('R', 'S', 'Z' for a zombie, ...) and parent,
// from /proc/PID/stat.
struct ProcessStatus {
  char state = 0;
  long parentPid = 0;
};
// nullopt when there is no such process (or its entry cannot be read).
std::optional<ProcessStatus> readProcessStatus(long pid);
// Whether the process is gone or dead: a zombie (a SIGKILLed child whose
// parent has not reaped it yet still answers kill(pid, 0)) counts as exited.
bool processExited(long pid);

// A whole file's contents, or nullopt when it cannot be opened or read
// (a /proc or /sys file of a process or device that is gone, an optional
// configuration file). Never throws.
std::optional<std::string> readFileIfPresent(const std::string& path);

// Reads a whole text file. Throws IoError naming `what` and the path.
std::string readTextFile(const std::string& path, const std::string& what);

// True when a TCP socket can bind `port` on all IPv4 addresses right now,
// with SO_REUSEADDR as a store would: a listener makes it busy, connections
// left in TIME_WAIT do not.
bool tcpPortIsFree(int port);

// A TCP port free at this moment (tcpPortIsFree) that the kernel hands to
// no one by itself: a random one from kFirstPickedPort up to the kernel's
// ephemeral range (ip_local_port_range; 30000-32767 by default), where no
// connect() or bind to port 0 lands, so a process starting later (rank 0's
// TCPStore, bench/master-port-race.sh) finds it still free unless it was
// bound by its number. Where that range is too small (under 256 ports) or
// 32 random tries are busy, a port the kernel picks (bind to port 0).
// Throws SystemError when no socket can be bound.
inline constexpr int kFirstPickedPort = 30000;
int pickFreeTcpPort();

// This user's private folder on this node, `${TMPDIR:-/tmp}/distrun-UID`,
// made (mode 0700) when missing: the home of container mounts and of a
// run's error files. ConfigError when it exists but is not a folder of this
// user's that only it may write (a link, another user's); SystemError when
// it cannot be made.
std::string userFolder(const Environment& env);

// Raises this process's soft limit on open files to its hard limit: node
// 0's store holds two connections per agent. Best effort; never throws.
void raiseOpenFileLimit();

}  // namespace distrun
