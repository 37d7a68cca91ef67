#pragma once
// For tests: the source folder of the tree a test binary was built from and
// that tree's build folder, where tests find the repository's data files and
// the built programs. They live in one generated source per tree
// (distrun_tree_paths, cmake/DistrunHelpers.cmake) rather than in compile
// definitions, so that no other object holds the clone's path and ccache
// serves a second clone of the same commit (docs/development.md).

namespace distrun::tree_paths {

const char* sourceDir();
const char* binaryDir();

}  // namespace distrun::tree_paths

#define DISTRUN_SOURCE_DIR (::distrun::tree_paths::sourceDir())
#define DISTRUN_BINARY_DIR (::distrun::tree_paths::binaryDir())
