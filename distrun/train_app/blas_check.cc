#include "distrun/train_app/blas_check.h"

#include <dlfcn.h>

#include <array>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace distrun::train {

std::optional<std::string> blasLibraryPath() {
  void* sgemm = ::dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (sgemm == nullptr || ::dladdr(sgemm, &info) == 0 || info.dli_fname == nullptr) {
    return std::nullopt;
  }
  return std::string(info.dli_fname);
}

std::optional<std::string> slowBlasWarning(const std::string& libraryPath) {
  std::error_code ignored;
  const std::filesystem::path resolved = std::filesystem::canonical(libraryPath, ignored);
  const std::string path = resolved.empty() ? libraryPath : resolved.string();
  static constexpr std::array<const char*, 3> kOptimised = {"openblas", "blis", "mkl"};
  for (const char* name : kOptimised) {
    if (path.find(name) != std::string::npos) return std::nullopt;
  }
  if (path.find("libblas") == std::string::npos) return std::nullopt;  // not a BLAS we know
  return fmt::format(
      "distrun-train: warning: LibTorch's BLAS is {}, a reference implementation: "
      "matrix products run ~20x slower (install libopenblas0-openmp: scripts/install-deps)",
      path);
}

}  // namespace distrun::train
