#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distrun/comm/communicator.h"
#include "distrun/common/environment.h"

namespace distrun::comm {

struct ConnectOptions {
  std::string backend = "gloo";  // gloo | mpi
  // Per-operation timeout; unset: DISTRUN_COMM_TIMEOUT seconds, else 300 s.
  std::optional<std::chrono::milliseconds> timeout;
  // Names this communicator in the store; ranks that create several
  // communicators create them in the same order.
  std::string name = "world";
};

// The backends this build has: "gloo", and "mpi" when built with MPI.
std::vector<std::string> availableBackends();

// Joins the job this process is a rank of, from the environment a launcher
// sets (docs/comm.md):
//  - gloo: RANK and WORLD_SIZE, then DISTRUN_STORE and DISTRUN_TOKEN (set by
//    `distrun run`), else MASTER_ADDR and MASTER_PORT, where rank 0 hosts
//    the store (`distrun exec`, or set by hand). Listens on GLOO_SOCKET_IFNAME
//    if set, else on 127.0.0.1 when every rank is on this node
//    (LOCAL_WORLD_SIZE == WORLD_SIZE), else on this host's name.
//  - mpi: MPI_COMM_WORLD of the MPI launcher (mpirun).
// Throws ConfigError naming a missing or malformed variable, UsageError for
// an unknown backend, TimeoutError when the ranks do not all arrive.
std::unique_ptr<Communicator> connect(const Environment& env,
                                      const ConnectOptions& options = {});

}  // namespace distrun::comm
