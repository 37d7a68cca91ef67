#include "distrun/cli/build_info.h"

#include <fmt/format.h>

#include "distrun/cli/build_info_generated.h"
#include "distrun/comm/backend_choice.h"
#include "distrun/common/strings.h"
#include "distrun/config.h"

namespace distrun::cli {

BuildInfo thisBuild() {
  return BuildInfo{.version = DISTRUN_VERSION,
                   .commit = DISTRUN_BUILD_COMMIT,
                   .compiler = DISTRUN_BUILD_COMPILER,
                   .buildType = DISTRUN_BUILD_TYPE,
                   .backends = comm::availableBackends(),
                   .mpiLibrary = comm::mpiLibraryBuiltWith(),
                   .libtorch = DISTRUN_BUILD_TORCH_VERSION,
                   .nccl = DISTRUN_WITH_NCCL != 0,
                   .cuda = DISTRUN_BUILD_CUDA_VERSION,
                   .ncclLibrary = DISTRUN_BUILD_NCCL_VERSION};
}

namespace {

// The GPU toolchain line of `distrun --version`.
std::string gpuText(const BuildInfo& b) {
  if (b.cuda.empty()) return "no CUDA toolkit (none found at build time, or -DDISTRUN_NCCL=OFF)";
  if (b.ncclLibrary.empty()) return fmt::format("CUDA {}, no NCCL found at build time", b.cuda);
  return fmt::format("CUDA {}, NCCL {} (found at build time)", b.cuda, b.ncclLibrary);
}

nlohmann::ordered_json stringOrNull(const std::string& s) {
  return s.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s);
}

}  // namespace

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
      "gpu: {}\n"
      "training: {}\n"
      "containers: built in (distrun wrap, --container; bubblewrap and squashfuse at run time)",
      b.version, b.commit, b.compiler, b.buildType.empty() ? "build" : b.buildType, backends,
      b.nccl ? "built (nccl, rccl; the library loaded at run time)" : "not built", gpuText(b),
      training);
}

nlohmann::ordered_json toJson(const BuildInfo& b) {
  nlohmann::ordered_json j;
  j["version"] = b.version;
  j["commit"] = b.commit;
  j["compiler"] = b.compiler;
  j["build_type"] = b.buildType;
  j["backends"] = b.backends;
  j["mpi_library"] = b.mpiLibrary;
  j["libtorch"] = stringOrNull(b.libtorch);
  j["nccl"] = b.nccl;
  j["cuda"] = stringOrNull(b.cuda);
  j["nccl_library"] = stringOrNull(b.ncclLibrary);
  j["containers"] = true;
  return j;
}

}  // namespace distrun::cli
