#include "distrun/cli/build_info.h"

#include <fmt/format.h>

#include "distrun/cli/build_info_generated.h"
#include "distrun/comm/connect.h"
#include "distrun/comm/mpi/mpi_communicator.h"
#include "distrun/common/strings.h"
#include "distrun/config.h"

namespace distrun::cli {

BuildInfo thisBuild() {
  return BuildInfo{.version = DISTRUN_VERSION,
                   .commit = DISTRUN_BUILD_COMMIT,
                   .compiler = DISTRUN_BUILD_COMPILER,
                   .buildType = DISTRUN_BUILD_TYPE,
                   .backends = comm::availableBackends(),
                   .mpiLibrary = comm::mpiLibrary(),
                   .libtorch = DISTRUN_BUILD_TORCH_VERSION,
                   .nccl = false};
}

std::string versionText(const BuildInfo& b) {
  std::string backends = join(b.backends, ", ");
  if (!b.mpiLibrary.empty()) backends += fmt::format(" ({})", b.mpiLibrary);
  const std::string training =
      b.libtorch.empty()
          ? "not built (-DDISTRUN_TRAIN=OFF: no distrun-train, no libdistrun training library)"
          : fmt::format("LibTorch {} (distrun train, distrun-train, libdistrun)", b.libtorch);
  return fmt::format(
      "distrun {} (commit {}, {} {})\n"
      "backends: {}; nccl: {}\n"
      "training: {}\n"
      "containers: built in (distrun wrap, --container; bubblewrap and squashfuse at run time)",
      b.version, b.commit, b.compiler, b.buildType.empty() ? "build" : b.buildType, backends,
      b.nccl ? "built" : "not built", training);
}

nlohmann::ordered_json toJson(const BuildInfo& b) {
  nlohmann::ordered_json j;
  j["version"] = b.version;
  j["commit"] = b.commit;
  j["compiler"] = b.compiler;
  j["build_type"] = b.buildType;
  j["backends"] = b.backends;
  j["mpi_library"] = b.mpiLibrary;
  j["libtorch"] =
      b.libtorch.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(b.libtorch);
  j["nccl"] = b.nccl;
  j["containers"] = true;
  return j;
}

}  // namespace distrun::cli
