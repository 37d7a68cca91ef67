#pragma once

#include <memory>
#include <string>

namespace distrun::testing {

// A real Slurm cluster on this machine for the length of a test suite:
// munged, slurmctld and `nodes` slurmd daemons (node1..nodeN on
// 127.0.0.11..), started by distrun/testing/local_slurm.sh in a private
// directory and stopped, every daemon, when this object is destroyed, or
// by the script's watcher when this process is killed.
class LocalSlurmCluster {
 public:
  // Why a cluster cannot be started here (Slurm or munge missing, not
  // root), or empty when it can.
  static std::string unavailableReason();

  // Starts the cluster and waits until every node is idle. Throws
  // std::runtime_error with the script's output when it fails. With
  // `hosts`, the words of NetworkHosts::environment() and
  // NETWORK_HOSTS_HERE (its reachFromHere()), the nodes are those hosts,
  // nid001..., each slurmd in its own (local_slurm.sh's hosts mode).
  explicit LocalSlurmCluster(int nodes, const std::string& hosts = "");
  ~LocalSlurmCluster();
  LocalSlurmCluster(const LocalSlurmCluster&) = delete;
  LocalSlurmCluster& operator=(const LocalSlurmCluster&) = delete;

  // A shell prefix that points Slurm clients at this cluster, e.g.
  // `cluster.env() + "srun -N2 hostname"`.
  const std::string& env() const { return env_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::string env_;
};

}  // namespace distrun::testing
