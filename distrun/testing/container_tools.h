#pragma once

// The real tools behind distrun's containers, for tests labelled
// `container`: each test skips with the reason printed when one is missing
// (scripts/install-deps installs them all, so CI skips none).
#include <initializer_list>
#include <string>

namespace distrun::testing {

// "" when every program in `programs` is on PATH (and, for a FUSE tool,
// /dev/fuse exists); else one line naming the first missing program and
// the Debian package that has it.
std::string containerToolsMissing(std::initializer_list<std::string> programs);

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it
// when the object goes (mounts under it are detached first); never under
// the source tree.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace distrun::testing
