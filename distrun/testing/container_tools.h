#pragma once

// The real tools behind distrun's containers, for tests labelled
// `container`: each test skips with the reason printed when one is missing
// (scripts/install-deps installs them all, so CI skips none).
#include <initializer_list>
#include <string>
#include <vector>

namespace distrun::testing {

// "" when every program in `programs` is on PATH (and, for a FUSE tool,
// /dev/fuse exists); else one line naming the first missing program and
// the Debian package that has it.
std::string containerToolsMissing(std::initializer_list<std::string> programs);

// An image built by the real `distrun wrap -o IMAGE ARGS...`, cached
// outside the clone (/var/tmp/distrun-test-cache, or
// $DISTRUN_TEST_CACHE) under a name keyed by its inputs: the arguments,
// the host's apt sources and distrun's own image code, so a change to any
// of them builds anew. Building takes a minute or more (mmdebstrap); tests
// share the result. Fails the calling test (ADD_FAILURE) and returns ""
// when the build fails.
std::string cachedImage(const std::vector<std::string>& wrapArguments);

// The image the job tests share: Debian's python3-torch, and the libraries
// distrun-train and distrun-bench need besides.
std::string torchImage();

// distrun's node mounts of `image` on this host now (the mount points under
// `distrun-UID/containers/`, named by the image's identity); other jobs'
// images on the machine do not count.
std::vector<std::string> imageMounts(const std::string& image);

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
