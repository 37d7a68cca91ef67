#pragma once

// One node's mount of one image, shared by every distrun process on the
// node that runs programs in it (an agent; or the four tasks of
// `srun -n 4 distrun exec --container`), made by the first and removed by
// the last, even when some are killed with SIGKILL.
//
// The folder of a mount is BASE/KEY (BASE: ${TMPDIR:-/tmp}/distrun-UID/
// containers; KEY: the image file's identity) and holds the image at `root`,
// how it was mounted in `how`, and two lock files (flock):
//   gate   held exclusively by whoever mounts, unmounts or inspects;
//   users  held shared by every user for its lifetime.
// A joiner takes the gate; if it then gets `users` exclusively without
// waiting, nobody uses the folder and whatever is there is stale: it clears
// it and mounts afresh; else it checks that the mount still serves (a FUSE
// mount whose daemon died does not) and joins it. Either way it holds
// `users` shared and lets the gate go. A leaver takes the gate, drops its
// shared lock, and if it then gets `users` exclusively without waiting it is
// the last: it unmounts and removes the folder, the gate file last. The
// kernel drops the locks of a killed process, so its mount is found unused
// by the next joiner, leaver or cleanStaleMounts. Lock files are checked
// after locking to still be the ones at their paths (a leaver may have
// removed them meanwhile), and opened again if not.
#include <functional>
#include <string>

#include "distrun/common/environment.h"
#include "distrun/common/unique_fd.h"

namespace distrun::container {

// What the protocol orders: the seam between it and real mounts, so that it
// is tested with forked processes on a scratch folder.
class MountFolder {
 public:
  virtual ~MountFolder() = default;
  // Whether `root`, made by `how`, still serves the image.
  virtual bool usable(const std::string& root, const std::string& how) const = 0;
  // Unmounts everything at or under `root` (detaching a dead FUSE mount)
  // and removes it with what is left in it (an unpacked tree) and
  // `root`.partial. Nothing to do when it is absent. Throws SystemError when
  // a mount stays (then nothing is removed).
  virtual void clear(const std::string& root) = 0;
};

// Makes the image readable at `root` (which clear() emptied), returning
// how ("loop /dev/loop3", "squashfuse_ll", "unpack"). Throws SystemError.
using MountFunction = std::function<std::string(const std::string& root)>;

// This user's folder of node mounts, ${TMPDIR:-/tmp}/distrun-UID/containers
// from `env`, created (mode 0700) if missing. Throws ConfigError when
// distrun-UID exists but is not a folder owned by this user, SystemError
// when it cannot be made.
std::string nodeMountBase(const Environment& env);

// A share of the node's mount of one image: joins it, mounting when no live
// process uses it, and leaves it when destroyed. Not copyable; not
// thread-safe (one per process).
class NodeMount {
 public:
  // Joins the mount `key` under `base`. Throws what `mount` and
  // MountFolder::clear throw (with no share taken), SystemError when a lock
  // file cannot be opened.
  NodeMount(const std::string& base, const std::string& key, const MountFunction& mount,
            MountFolder& folder);
  // Leaves; the last user unmounts and removes the folder. Never throws: a
  // failure leaves a stale folder for the next open() to clear.
  ~NodeMount();
  NodeMount(const NodeMount&) = delete;
  NodeMount& operator=(const NodeMount&) = delete;

  const std::string& root() const { return root_; }
  const std::string& how() const { return how_; }
  // True when this process mounted the image; false when it joined a mount.
  bool mountedHere() const { return mountedHere_; }

 private:
  void join(const MountFunction& mount);
  void mountAfresh(const MountFunction& mount);
  void abandon() noexcept;

  std::string dir_;
  std::string root_;
  std::string how_;
  bool mountedHere_ = false;
  MountFolder& folder_;
  UniqueFd users_;
};

// Clears and removes every mount folder under `base` that no live process
// uses (left by a process killed with SIGKILL), skipping `except` and any
// folder being mounted or unmounted right now. Returns how many it removed.
// Never throws: a folder it cannot clear stays for a later call.
int cleanStaleMounts(const std::string& base, MountFolder& folder, const std::string& except = "");

}  // namespace distrun::container
