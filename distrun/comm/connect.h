#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distrun/comm/backend_choice.h"
#include "distrun/comm/communicator.h"
#include "distrun/common/environment.h"

namespace distrun::comm {

struct ConnectOptions {
  std::string backend = "auto";  // auto | gloo | mpi | nccl | rccl (resolveBackend)
  // Per-operation timeout; unset: DISTRUN_COMM_TIMEOUT seconds, else 300 s.
  std::optional<std::chrono::milliseconds> timeout;
  // Names this communicator's group in the store (see connect() for how
  // the communicators of one group are told apart).
  std::string name = "world";
};

// Joins the job this process is a rank of, from the environment a launcher
// sets (docs/comm.md), with options.backend resolved (resolveBackend):
//  - gloo: RANK and WORLD_SIZE, then DISTRUN_STORE and DISTRUN_TOKEN (set by
//    `distrun run`), else MASTER_ADDR and MASTER_PORT, where rank 0 hosts
//    the store (`distrun exec`, or set by hand). Listens on GLOO_SOCKET_IFNAME
//    if set, else on 127.0.0.1 when every rank is on this node
//    (LOCAL_WORLD_SIZE == WORLD_SIZE), else on this host's name.
//  - mpi: MPI_COMM_WORLD of the MPI launcher (mpirun).
//  - nccl, rccl: NCCL (RCCL) on this rank's GPU, its unique id passed
//    through the store as for gloo (nccl/connect_nccl.h); the collectives
//    take device buffers. Never chosen by "auto".
// Throws ConfigError naming a missing or malformed variable, UsageError for
// an unknown backend, TimeoutError when the ranks do not all arrive.
//
// With DISTRUN_TRACE set (docs/observability.md), the process's first
// communicator starts its trace (distrun/trace/trace.h) and measures its
// clock offset to rank 0, a ping-pong every rank joins (so every rank must
// have the same DISTRUN_TRACE, as launchers give it). A malformed
// DISTRUN_TRACE* value throws UsageError, a trace folder that cannot be
// made IoError, before connecting. Unset: no trace, nothing exchanged.
//
// Gloo's key space in the store. The ranks of one group (same run id,
// restart count, options.name and WORLD_SIZE) share a counter in the store:
// each rank adds 1 to it as it connects, and a communicator is numbered
// (ticket - 1) / WORLD_SIZE. No rank can finish making the group's k-th
// communicator, and so ask for a ticket for the next, before every rank
// has taken its ticket for the k-th (construction ends in a barrier); so
// tickets k*WORLD_SIZE+1 .. (k+1)*WORLD_SIZE all go to the k-th, and the
// n-th communicator a group makes gets the same keys on every rank,
// however many communicators each process made before (under other
// names, world sizes or stores). Two communicators of one group made at
// once (in two threads of a rank) share no order, and neither does a
// group after a rank failed to connect: make the group's next
// communicator in a new restart.
std::unique_ptr<Communicator> connect(const Environment& env, const ConnectOptions& options = {});

}  // namespace distrun::comm
