#include "distrun/container/mount_plan.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/container/internal/paths.h"

namespace distrun::container {

namespace {

// "/a/b/c" -> {"/a", "/a/b"}: the folders above `path`, "/" excluded.
std::vector<std::string> foldersAbove(const std::string& path) {
  std::vector<std::string> folders;
  for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    folders.push_back(path.substr(0, at));
  }
  return folders;
}

size_t depth(const std::string& path) {
  return static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
}

// A mount inside another mount's destination lies in that mount (a host
// folder, /dev, /tmp), not in the image.
bool insideAnotherMount(const SandboxMount& mount, const std::vector<SandboxMount>& mounts) {
  return std::any_of(mounts.begin(), mounts.end(), [&](const SandboxMount& other) {
    return detail::strictlyUnder(mount.destination, other.destination);
  });
}

std::string kindName(EntryKind kind) {
  switch (kind) {
    case EntryKind::kDirectory:
      return "a folder";
    case EntryKind::kFile:
      return "a file";
    case EntryKind::kSymlink:
      return "a symbolic link";
    case EntryKind::kMissing:
      break;
  }
  return "nothing";
}

// Where the image cannot take the mount: skipped when optional, else an error.
bool refuse(const SandboxMount& mount, const std::string& why) {
  if (mount.optional) return false;
  throw ConfigError(fmt::format("{}: {}", mount.origin, why));
}

// Checks `mount` against the image and adds to `split` the image folders
// that must become tmpfs folders: those above a destination the image lacks,
// or has as another kind (the mount replaces that entry). False when an
// optional mount does not fit and is left out.
bool place(const ImageTree& image, const SandboxMount& mount, std::set<std::string>& split) {
  if (mount.destination == "/") return refuse(mount, "cannot mount over the image's root folder");
  std::vector<std::string> above = foldersAbove(mount.destination);
  std::vector<std::string> existing;
  for (const std::string& folder : above) {
    EntryKind kind = image.kind(folder);
    if (kind == EntryKind::kMissing) break;
    if (kind != EntryKind::kDirectory) {
      return refuse(mount, fmt::format("{} lies under {}, {} in the image: bind to a path "
                                       "without links, the one {} leads to",
                                       mount.destination, folder, kindName(kind), folder));
    }
    existing.push_back(folder);
  }
  EntryKind kind =
      existing.size() == above.size() ? image.kind(mount.destination) : EntryKind::kMissing;
  EntryKind wanted = mount.sourceIsFile ? EntryKind::kFile : EntryKind::kDirectory;
  if (kind == wanted) return true;  // mounted over in place
  if (kind != EntryKind::kMissing && mount.optional) return false;
  split.insert(existing.begin(), existing.end());
  return true;
}

struct Tree {
  const ImageTree& image;
  const std::string& root;
  const std::set<std::string>& split;
  const std::set<std::string>& destinations;
};

// The image's entries of folder `folder` (a tmpfs folder), recursing into
// the folders that are split too.
void addFolder(const Tree& tree, const std::string& folder, std::vector<std::string>& args) {
  for (const std::string& name : tree.image.entries(folder)) {
    std::string path = detail::childPath(folder, name);
    if (tree.destinations.count(path) != 0) continue;  // a mount replaces it
    if (tree.split.count(path) != 0) {
      args.insert(args.end(), {"--dir", path});
      addFolder(tree, path, args);
      continue;
    }
    EntryKind kind = tree.image.kind(path);
    if (kind == EntryKind::kSymlink) {
      args.insert(args.end(), {"--symlink", tree.image.linkTarget(path), path});
    } else if (kind != EntryKind::kMissing) {
      args.insert(args.end(), {"--ro-bind", tree.root + path, path});
    }
  }
}

void addMount(const SandboxMount& mount, std::vector<std::string>& args) {
  switch (mount.kind) {
    case SandboxMount::Kind::kBind:
      args.push_back("--bind");
      break;
    case SandboxMount::Kind::kReadOnlyBind:
      args.push_back("--ro-bind");
      break;
    case SandboxMount::Kind::kDeviceBind:
      args.push_back("--dev-bind");
      break;
  }
  args.insert(args.end(), {mount.source, mount.destination});
}

}  // namespace

std::vector<std::string> planMounts(const ImageTree& image, const std::string& imageRoot,
                                    const std::vector<SandboxMount>& mounts) {
  std::set<std::string> split;
  std::vector<SandboxMount> kept;
  for (const SandboxMount& mount : mounts) {
    if (insideAnotherMount(mount, mounts) || place(image, mount, split)) kept.push_back(mount);
  }
  std::set<std::string> destinations;
  for (const SandboxMount& mount : kept) destinations.insert(mount.destination);
  std::vector<std::string> args;
  addFolder(Tree{image, imageRoot, split, destinations}, "/", args);
  std::stable_sort(kept.begin(), kept.end(), [](const SandboxMount& a, const SandboxMount& b) {
    return depth(a.destination) < depth(b.destination);
  });
  for (const SandboxMount& mount : kept) addMount(mount, args);
  return args;
}

EntryKind HostImageTree::kind(const std::string& path) const {
  struct stat st {};
  if (::lstat((root_ + path).c_str(), &st) != 0) return EntryKind::kMissing;
  if (S_ISDIR(st.st_mode)) return EntryKind::kDirectory;
  if (S_ISLNK(st.st_mode)) return EntryKind::kSymlink;
  return EntryKind::kFile;  // sockets and device nodes bind like files
}

std::vector<std::string> HostImageTree::entries(const std::string& path) const {
  std::vector<std::string> names;
  DIR* dir = ::opendir((root_ + path).c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::string HostImageTree::linkTarget(const std::string& path) const {
  std::string target(4096, '\0');
  ssize_t n = ::readlink((root_ + path).c_str(), target.data(), target.size());
  target.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return target;
}

}  // namespace distrun::container
