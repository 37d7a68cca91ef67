#pragma once

#include <optional>
#include <string>

namespace distrun::train {

// The file of the shared library that provides `sgemm_` (the BLAS LibTorch
// calls for matrix products on the CPU) in this process, or nullopt when
// the symbol is not found.
std::optional<std::string> blasLibraryPath();

// A warning for rank 0 when that library is a reference BLAS (Debian's
// netlib build under .../blas/, or any libblas without "openblas", "blis"
// or "mkl" in its resolved path), which makes a CNN's fully connected
// layers about 20x slower; nullopt otherwise.
std::optional<std::string> slowBlasWarning(const std::string& libraryPath);

}  // namespace distrun::train
