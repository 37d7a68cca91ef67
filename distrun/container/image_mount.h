#pragma once

// The three ways distrun's own runtime makes an image readable on a node,
// tried in this order unless DISTRUN_CONTAINER_MOUNT names one:
//   loop        (root only) the kernel's SquashFS on a loop device set up
//               with the file system's offset, read-only, autoclear;
//   squashfuse  squashfuse_ll (else squashfuse) -o offset=N, unprivileged,
//               a daemon that outlives the process that mounted;
//   unpack      unsquashfs -o N into the folder: slow, needs the space,
//               works everywhere.
#include <string>

#include "distrun/common/environment.h"
#include "distrun/container/image_file.h"
#include "distrun/container/node_mount.h"

namespace distrun::container {

enum class MountMethod { kAuto, kLoop, kSquashfuse, kUnpack };

// The variable that forces a method: auto, loop, squashfuse or unpack.
inline constexpr const char* kMountMethodVariable = "DISTRUN_CONTAINER_MOUNT";

// DISTRUN_CONTAINER_MOUNT from `env` (unset: auto). Throws ConfigError
// naming the variable and the four choices.
MountMethod mountMethodFrom(const Environment& env);

// Makes `image` readable at `root` (absent or an empty folder) by `method`
// (auto: loop when this process is root, then squashfuse, then unpack, each
// tried when the one before fails); tools are looked up on `env`'s PATH.
// Returns how: "loop /dev/loopN", "squashfuse_ll", "squashfuse" or
// "unpack". Throws SystemError (exit 71) naming the image and, for each way
// tried, why it failed.
std::string mountImage(const ImageFile& image, const std::string& root, MountMethod method,
                       const Environment& env);

// Real mounts: unmounts with umount2 (as root) or fusermount3 -u (else),
// detaching lazily; a FUSE mount whose daemon died (ENOTCONN) is not usable.
class HostMountFolder : public MountFolder {
 public:
  explicit HostMountFolder(std::string path) : path_(std::move(path)) {}
  bool usable(const std::string& root, const std::string& how) const override;
  void clear(const std::string& root) override;

 private:
  std::string path_;  // PATH for fusermount3
};

}  // namespace distrun::container
