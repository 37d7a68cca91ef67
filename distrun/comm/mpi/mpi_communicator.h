#pragma once

#include <memory>
#include <string>

#include "distrun/comm/communicator.h"

namespace distrun::comm {

// The MPI backend: a duplicate of MPI_COMM_WORLD, initialised here if the
// program has not (MPI_THREAD_SERIALIZED requested: asynchronous operations
// then run on the communicator's background thread). Collectives are MPI's
// own (Open MPI picks the algorithm); half and bfloat16 reduce through
// user-defined MPI operations. MPI errors return instead of aborting and
// throw CommunicationError with MPI's message; a dead peer is detected by
// the MPI runtime, which ends the job (mpirun names the rank).
// In a build without MPI, throws UsageError saying so.
std::unique_ptr<Communicator> connectMpi();

// What a build without MPI says when asked for it.
inline constexpr const char* kBuiltWithoutMpi =
    "this distrun was built without MPI (install libopenmpi-dev, as scripts/install-deps does, "
    "and rebuild)";

// The MPI library this build links, as it names itself up to its first
// comma ("Open MPI v4.1.4"; MPI_Get_library_version, which needs no
// MPI_Init); empty in a build without MPI.
std::string mpiLibrary();

}  // namespace distrun::comm
