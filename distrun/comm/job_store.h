#pragma once

// The store a communicator's ranks meet at, found from the environment a
// launcher sets (connect.h says which variables): the Gloo backend keeps it
// for its whole life, the NCCL backend passes its unique id through it.

#include <chrono>
#include <memory>
#include <string>

#include "distrun/common/environment.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"

namespace distrun::comm {

struct JobStore {
  int rank = 0;
  int size = 1;
  // The store rank 0 hosts at MASTER_ADDR:MASTER_PORT where no launcher's
  // store (DISTRUN_STORE) is given; null elsewhere.
  std::unique_ptr<rdzv::StoreServer> server;
  std::unique_ptr<rdzv::StoreClient> client;
  // This communicator's key space in the store (connect.h).
  std::string prefix;
};

// RANK and WORLD_SIZE, then DISTRUN_STORE and DISTRUN_TOKEN, else
// MASTER_ADDR and MASTER_PORT (rank 0 hosting the store there); the store's
// calls wait `timeout` at most. Throws ConfigError naming a missing or
// malformed variable.
JobStore joinJobStore(const Environment& env, const std::string& name,
                      std::chrono::milliseconds timeout);

// Whether every rank is on this node (LOCAL_WORLD_SIZE == WORLD_SIZE).
bool oneNode(const Environment& env, int worldSize);

}  // namespace distrun::comm
