#include "distrun/testing/local_slurm_cluster.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "distrun/testing/command.h"

namespace distrun::testing {

namespace {

std::string script() { return quote(sourcePath("distrun/testing/local_slurm.sh")); }

// "export A=b" lines into "A=b C=d " for a command prefix.
std::string envPrefix(const std::string& exports) {
  std::string prefix;
  for (const std::string& line : lines(exports)) {
    if (line.rfind("export ", 0) == 0) prefix += line.substr(7) + " ";
  }
  return prefix;
}

}  // namespace

std::string LocalSlurmCluster::unavailableReason() {
  if (::geteuid() != 0) return "the local Slurm cluster needs root";
  CommandResult check = runCommand("bash " + script() + " check");
  if (check.exitCode != 0) {
    return "Slurm or munge is not installed (scripts/install-deps): " + check.err;
  }
  return "";
}

LocalSlurmCluster::LocalSlurmCluster(int nodes, const std::string& hosts) {
  char pattern[] = "/tmp/distrun-slurm-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    throw std::runtime_error("mkdtemp failed for the Slurm cluster directory");
  }
  dir_ = pattern;
  // This process owns the cluster: if it is killed (a test's time limit),
  // the script's watcher stops the daemons.
  CommandResult start = runCommand(hosts + " bash " + script() + " start " + quote(dir_) + " " +
                                   std::to_string(nodes) + " " + std::to_string(::getpid()));
  if (start.exitCode != 0) {
    std::string logs = runCommand("tail -n 20 " + quote(dir_) + "/log/*").out;
    runCommand("bash " + script() + " stop " + quote(dir_));
    throw std::runtime_error("local Slurm cluster did not start: " + start.err + "\n" + logs);
  }
  env_ = envPrefix(start.out);
}

LocalSlurmCluster::~LocalSlurmCluster() {
  runCommand("bash " + script() + " stop " + quote(dir_));
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace distrun::testing
