#pragma once

// Which collectives backend a job uses, decided from names and the
// environment alone: no backend's library is touched, so the `distrun`
// command (flags, --version) links none of Gloo and MPI and starts in
// milliseconds (docs/launcher.md, "Speed").

#include <string>
#include <vector>

#include "distrun/common/environment.h"

namespace distrun::comm {

// What a build without MPI says when asked for it.
inline constexpr const char* kBuiltWithoutMpi =
    "this distrun was built without MPI (install libopenmpi-dev, as scripts/install-deps does, "
    "and rebuild)";

// The backends this build has: "gloo", and "mpi" when built with MPI.
std::vector<std::string> availableBackends();

// The MPI library this build was compiled against, as its mpi.h names it
// ("Open MPI v4.1.4", "MPICH 4.0"); empty in a build without MPI.
std::string mpiLibraryBuiltWith();

// Refuses, before anything starts, a backend name this build cannot run:
// UsageError "FLAG NAME: expected auto, gloo or mpi" (without mpi in a build
// without MPI, saying so when asked for it).
void checkBackendName(const std::string& name, const std::string& flag);

// Whether an MPI launcher (mpirun, mpiexec) started this process.
bool launchedByMpi(const Environment& env);

// The backend `requested` names: "auto" is "mpi" when this build has MPI
// and an MPI launcher started a job that spans nodes (MPI then uses the
// fabric's own transport, where Gloo has only TCP), else "gloo" (on one
// node its shared-memory collectives; without an MPI launcher, MPI cannot
// start). Other names are returned as they are (connect() checks them).
std::string resolveBackend(const Environment& env, const std::string& requested);

}  // namespace distrun::comm
