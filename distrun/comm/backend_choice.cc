#include "distrun/comm/backend_choice.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/config.h"

#if DISTRUN_WITH_MPI
// Only mpi.h's version macros are read: nothing of MPI is linked.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace distrun::comm {

std::vector<std::string> availableBackends() {
  std::vector<std::string> names = {"gloo"};
  if (DISTRUN_WITH_MPI) names.push_back("mpi");
  return names;
}

std::string mpiLibraryBuiltWith() {
#if !DISTRUN_WITH_MPI
  return "";
#elif defined(OMPI_MAJOR_VERSION)
  return fmt::format("Open MPI v{}.{}.{}", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                     OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
  return std::string("MPICH ") + MPICH_VERSION;
#else
  return fmt::format("MPI {}.{}", MPI_VERSION, MPI_SUBVERSION);
#endif
}

void checkBackendName(const std::string& name, const std::string& flag) {
  const std::vector<std::string> built = availableBackends();
  if (name == "auto" || std::find(built.begin(), built.end(), name) != built.end()) return;
  if (name == "mpi") {
    throw UsageError(fmt::format("{} mpi: {}; expected auto or gloo", flag, kBuiltWithoutMpi));
  }
  throw UsageError(fmt::format("{} '{}': expected auto, {}", flag, name, join(built, ", ")));
}

bool launchedByMpi(const Environment& env) {
  return env.has("OMPI_COMM_WORLD_SIZE") || env.has("PMI_SIZE") || env.has("PMIX_RANK");
}

namespace {

// Whether the MPI launcher put ranks on more than one node: its local size
// is below its world size, or it does not say.
bool mpiJobSpansNodes(const Environment& env) {
  for (const auto& [world, local] :
       {std::pair{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
        std::pair{"PMI_SIZE", "MPI_LOCALNRANKS"}}) {
    const std::optional<std::string> size = env.get(world);
    if (!size) continue;
    const std::optional<std::string> here = env.get(local);
    return !here || *here != *size;
  }
  return true;
}

}  // namespace

std::string resolveBackend(const Environment& env, const std::string& requested) {
  if (requested != "auto") return requested;
  return DISTRUN_WITH_MPI && launchedByMpi(env) && mpiJobSpansNodes(env) ? "mpi" : "gloo";
}

}  // namespace distrun::comm
