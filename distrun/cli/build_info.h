#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace distrun::cli {

// What this distrun is: its version, the commit it was built from, and the
// optional parts built in, as CMake found them when the build was
// configured. A value.
struct BuildInfo {
  std::string version;
  std::string commit;    // "unknown" when not built from a git checkout
  std::string compiler;  // "GNU 12.2.0"
  std::string buildType;
  std::vector<std::string> backends;  // "gloo", and "mpi" when built with MPI
  std::string mpiLibrary;             // "Open MPI v4.1.4"; empty without MPI
                                      // (asked of the library at run time)
  std::string libtorch;               // the LibTorch version distrun-train links
  bool nccl = false;                  // the nccl and rccl backends (comm/nccl/)
  std::string cuda;                   // the CUDA toolkit found at build time, "13.0.88";
                                      // empty when none was (or -DDISTRUN_NCCL=OFF)
  std::string ncclLibrary;            // the NCCL found beside it, "2.28.9"; empty likewise
};

BuildInfo thisBuild();

// `distrun --version`: one line of version and commit, then one per part.
std::string versionText(const BuildInfo& build);

// The same facts as JSON (`distrun env --format json`'s "build").
nlohmann::ordered_json toJson(const BuildInfo& build);

}  // namespace distrun::cli
