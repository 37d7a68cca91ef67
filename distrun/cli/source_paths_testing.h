#pragma once
// For the cli tests: files and folders of the source tree they give distrun
// as arguments (the test binary is built with DISTRUN_SOURCE_DIR).
#include <string>
#include "distrun/testing/tree_paths.h"

namespace distrun::cli::testing {

inline const std::string kSourceDir = DISTRUN_SOURCE_DIR;
// A folder that exists: the docs.
inline const std::string kDocs = kSourceDir + "/docs";
// A file that is neither a container image nor JSON.
inline const std::string kNotAnImage = kSourceDir + "/README.md";
// distrun plot's inputs: metrics files and traces (distrun/plot/testdata).
inline const std::string kPlotData = kSourceDir + "/distrun/plot/testdata";

}  // namespace distrun::cli::testing
