#pragma once

#include <memory>
#include <string>

#include "distrun/comm/backend_choice.h"
#include "distrun/comm/communicator.h"

namespace distrun::comm {

// The thread level distrun asks MPI for (DISTRUN_COMM_MPI_THREADS): with
// SERIALIZED, asynchronous operations run on the communicator's background
// thread; below it, they complete before they return, and Open MPI skips
// the locking that costs a 4 KB allreduce a sixth of its time
// (docs/comm.md).
enum class MpiThreads { kSingle, kFunneled, kSerialized };

// The MPI backend: a duplicate of MPI_COMM_WORLD, initialised here at
// `threads` if the program has not (otherwise at the program's level).
// Collectives are MPI's
// own (Open MPI picks the algorithm); half and bfloat16 reduce through
// user-defined MPI operations. MPI errors return instead of aborting and
// throw CommunicationError with MPI's message; a dead peer is detected by
// the MPI runtime, which ends the job (mpirun names the rank).
// In a build without MPI, throws UsageError saying so.
std::unique_ptr<Communicator> connectMpi(MpiThreads threads = MpiThreads::kSerialized);

// The ranks of `world` (a communicator of connectMpi) that pass the same
// `color`, in `world`'s order, as a communicator of their own
// (MPI_Comm_split); null for a color below 0. Collective over `world`;
// call it with none of `world`'s asynchronous operations pending.
// UsageError when `world` is not an MPI communicator.
std::unique_ptr<Communicator> splitMpi(Communicator& world, int color);

}  // namespace distrun::comm
