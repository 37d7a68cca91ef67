#pragma once

// The mount tree a worker sees inside distrun's own container runtime, as
// bubblewrap arguments: a pure function of the image's tree and the mounts
// wanted, unit-tested with an in-memory tree.
//
// The image's SquashFS root is read-only, so a mount whose destination does
// not exist in the image (the working directory /home/ada/project, a --bind
// to /scratch) cannot get a new folder there. The root is therefore
// bubblewrap's tmpfs with the image's top-level entries bound in one by one
// (read-only); where a destination lies under an image folder that lacks it,
// that folder too is made a tmpfs folder with its entries bound in, down to
// the deepest folder the image has. Destinations the image already has are
// mounted over in place.
#include <string>
#include <vector>

namespace distrun::container {

enum class EntryKind { kMissing, kDirectory, kFile, kSymlink };

// A read-only view of an image's file tree, paths absolute inside the image
// (lstat semantics: a symbolic link is reported, not followed).
class ImageTree {
 public:
  virtual ~ImageTree() = default;
  virtual EntryKind kind(const std::string& path) const = 0;
  // The names in folder `path`, sorted.
  virtual std::vector<std::string> entries(const std::string& path) const = 0;
  virtual std::string linkTarget(const std::string& path) const = 0;
};

// The image as mounted or unpacked at `root` on this host.
class HostImageTree : public ImageTree {
 public:
  explicit HostImageTree(std::string root) : root_(std::move(root)) {}
  EntryKind kind(const std::string& path) const override;
  std::vector<std::string> entries(const std::string& path) const override;
  std::string linkTarget(const std::string& path) const override;

 private:
  std::string root_;
};

// One mount inside the container: host path `source` at `destination`;
// `sourceIsFile` tells which kind the destination must be in the image.
struct SandboxMount {
  enum class Kind { kBind, kReadOnlyBind, kDeviceBind };
  Kind kind = Kind::kBind;
  std::string source;
  std::string destination;  // absolute, normalised
  bool sourceIsFile = false;
  // Skipped (not an error) when the image has something else there: the
  // host's /etc/hosts over an image without one, say.
  bool optional = false;
  // Why it is there, for messages: "--bind /data", "the working directory".
  std::string origin;
};

// The bubblewrap arguments that build the tree: the image's part (from
// `imageRoot`, its host path) first, then `mounts`, parents before children.
// A mount whose destination the image has as another kind (a file bound
// where the image has a folder or a link) replaces that entry; an optional
// one is left out instead. Throws ConfigError naming the mount's origin
// when its destination lies under a symbolic link or a file in the image
// (bind to the path the link leads to), or is the root itself.
std::vector<std::string> planMounts(const ImageTree& image, const std::string& imageRoot,
                                    const std::vector<SandboxMount>& mounts);

}  // namespace distrun::container
