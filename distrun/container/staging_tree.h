#pragma once

// The staging tree of `distrun wrap`: the image's root file system as a
// folder, before mksquashfs packs it. Measuring it, finding a path inside it
// as the running image will (symlinks resolved within the tree, never on
// the host), the layout Apptainer and Singularity expect of an image they
// run, the image's environment file, and removing the tree safely.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace distrun::container {

// Entries (files, folders, links, devices; the top folder not counted)
// and the bytes of the regular files in a tree.
struct TreeStats {
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

// Walks `root` without following symlinks or crossing into other mounted
// file systems. Unreadable parts are skipped. {0, 0} when `root` is missing.
TreeStats measureTree(const std::string& root);

// The bytes of the regular files `unsquashfs -lln` lists (its third column
// for lines starting with '-'): what unpacking the image stages.
uint64_t listedFileBytes(const std::string& listing);

// The host path of `pathInImage` (absolute) in the tree at `root`, each
// component resolved as the image will see it: a symlink to /usr/lib is
// followed to ROOT/usr/lib, `..` stops at ROOT. Components that do not
// exist are kept as they are. Throws IoError for a symlink loop.
std::string resolveInRoot(const std::string& root, const std::string& pathInImage);

// What the image's root needs to be run by Apptainer, Singularity or
// `distrun enter`, made where missing: the mount points /proc /sys /dev
// /tmp /var/tmp /home /root /run /mnt /etc (a read-only image cannot grow
// them at run time; /tmp and /var/tmp mode 1777), empty /etc/hosts and
// /etc/resolv.conf (the runtimes bind the host's over them), and
// /.singularity.d with env/, libs/ and the exec, run and shell actions that
// older Singularity versions run. Existing files are left as they are.
// Throws IoError naming the path that could not be made.
void makeImageLayout(const std::string& root);

// mmdebstrap copies the build host's /etc/resolv.conf and /etc/hostname
// into the tree (for debootstrap's sake, whatever the variant); an image
// runs on other hosts. Removes each from the tree at `root` when it holds
// exactly what the host's (under `hostRoot`) holds; a file a package put
// there stays. makeImageLayout then makes an empty resolv.conf.
void forgetBuildHost(const std::string& root, const std::string& hostRoot = "");

// Where the image's environment goes: Apptainer's convention, a script in
// /.singularity.d/env sourced when the container starts.
inline constexpr const char* kEnvFile = "/.singularity.d/env/90-distrun.sh";

// The lines that set `env` (exported, values as given, quoted) and put
// `paths` in front of PATH in the order given. "" when both are empty.
std::string environmentLines(const std::vector<std::pair<std::string, std::string>>& env,
                             const std::vector<std::string>& paths);

// Appends `lines` to ROOT/.singularity.d/env/90-distrun.sh, creating it
// (mode 0755, with a header) when the image has none: an image built on
// a --base keeps the base's settings, and the new ones come after them.
void appendEnvironment(const std::string& root, const std::string& lines);

// Removes the staging folder `path` and everything in it. Mounts at or under
// it (mmdebstrap mounts /proc and /dev into the tree while it installs) are
// detached first, so the removal never descends into a host file system.
// Folders without the owner's write bit (unpacked from a --base by a user)
// are made writable first. Throws IoError, leaving the folder, when a mount
// cannot be detached; returns false when some files could not be removed.
bool removeStaging(const std::string& path);

// The mount points at or under `path` in this process's mount namespace,
// from /proc/self/mountinfo (octal escapes decoded), in mount order.
std::vector<std::string> mountsUnder(const std::string& path);

}  // namespace distrun::container
