#include "distrun/container/staging_tree.h"

#include <fcntl.h>
#include <fts.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"
#include "distrun/common/unique_fd.h"
#include "distrun/container/internal/paths.h"

namespace distrun::container {

namespace {

namespace fs = std::filesystem;

constexpr int kMaxSymlinkHops = 40;  // as the kernel's path walk

constexpr const char* kExecAction =
    "#!/bin/sh\n"
    "# Written by distrun wrap: older Singularity versions run it for `exec`.\n"
    "for script in /.singularity.d/env/*.sh; do\n"
    "  if [ -f \"$script\" ]; then . \"$script\"; fi\n"
    "done\n"
    "exec \"$@\"\n";

constexpr const char* kRunAction =
    "#!/bin/sh\n"
    "# Written by distrun wrap: older Singularity versions run it for `run`.\n"
    "for script in /.singularity.d/env/*.sh; do\n"
    "  if [ -f \"$script\" ]; then . \"$script\"; fi\n"
    "done\n"
    "if [ -x /.singularity.d/runscript ]; then exec /.singularity.d/runscript \"$@\"; fi\n"
    "exec /bin/sh \"$@\"\n";

constexpr const char* kShellAction =
    "#!/bin/sh\n"
    "# Written by distrun wrap: older Singularity versions run it for `shell`.\n"
    "for script in /.singularity.d/env/*.sh; do\n"
    "  if [ -f \"$script\" ]; then . \"$script\"; fi\n"
    "done\n"
    "if [ -x /bin/bash ]; then exec /bin/bash --norc \"$@\"; fi\n"
    "exec /bin/sh \"$@\"\n";

constexpr const char* kEnvHeader =
    "#!/bin/sh\n"
    "# Written by distrun wrap (--env, --path): sourced when the container starts.\n";

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> parts;
  for (const std::string& part : split(path, '/')) {
    if (!part.empty() && part != ".") parts.push_back(part);
  }
  return parts;
}

std::string joinUnder(const std::string& root, const std::vector<std::string>& parts) {
  std::string path = root;
  for (const std::string& part : parts) path += "/" + part;
  return path;
}

void writeNewFile(const std::string& path, const std::string& contents, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd) throw IoError(fmt::format("staging {}: cannot create: {}", path, std::strerror(errno)));
  if (::write(fd.get(), contents.data(), contents.size()) !=
      static_cast<ssize_t>(contents.size())) {
    throw IoError(fmt::format("staging {}: cannot write: {}", path, std::strerror(errno)));
  }
  ::fchmod(fd.get(), mode);  // the umask does not narrow it
}

bool present(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

void makeFolder(const std::string& root, const std::string& pathInImage, mode_t mode) {
  const std::string path = resolveInRoot(root, pathInImage);
  if (present(path)) return;
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw IoError(fmt::format("staging {}: cannot create: {}", path, ec.message()));
  ::chmod(path.c_str(), mode);
}

void makeFileIfMissing(const std::string& root, const std::string& pathInImage,
                       const std::string& contents, mode_t mode) {
  const std::string path = resolveInRoot(root, pathInImage);
  if (!present(path)) writeNewFile(path, contents, mode);
}

std::string decodeMountPath(const std::string& field) {
  std::string path;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      path += static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      path += field[i];
    }
  }
  return path;
}

// Adds the owner's write and search bits to every folder under `root`.
void makeFoldersWritable(const std::string& root) {
  char* paths[] = {const_cast<char*>(root.c_str()), nullptr};
  FTS* tree = ::fts_open(paths, FTS_PHYSICAL | FTS_XDEV | FTS_NOCHDIR, nullptr);
  if (tree == nullptr) return;
  while (FTSENT* entry = ::fts_read(tree)) {
    if (entry->fts_info != FTS_D && entry->fts_info != FTS_DNR) continue;
    const bool changed =
        ::chmod(entry->fts_path, (entry->fts_statp->st_mode & 07777) | S_IRWXU) == 0;
    // Read again what could not be read; once only: now it can, or it is not ours.
    if (entry->fts_info == FTS_DNR && changed && !(entry->fts_statp->st_mode & S_IRUSR)) {
      ::fts_set(tree, entry, FTS_AGAIN);
    }
  }
  ::fts_close(tree);
}

}  // namespace

TreeStats measureTree(const std::string& root) {
  TreeStats stats;
  char* paths[] = {const_cast<char*>(root.c_str()), nullptr};
  FTS* tree = ::fts_open(paths, FTS_PHYSICAL | FTS_XDEV | FTS_NOCHDIR, nullptr);
  if (tree == nullptr) return stats;
  while (FTSENT* entry = ::fts_read(tree)) {
    if (entry->fts_info == FTS_DP || entry->fts_level == 0) continue;
    ++stats.entries;
    if (entry->fts_info == FTS_F) stats.bytes += static_cast<uint64_t>(entry->fts_statp->st_size);
  }
  ::fts_close(tree);
  return stats;
}

uint64_t listedFileBytes(const std::string& listing) {
  std::istringstream lines(listing);
  uint64_t bytes = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '-') continue;
    std::istringstream fields(line);
    std::string mode, owner;
    uint64_t size = 0;
    if (fields >> mode >> owner >> size) bytes += size;
  }
  return bytes;
}

std::string resolveInRoot(const std::string& root, const std::string& pathInImage) {
  std::vector<std::string> done;
  std::deque<std::string> todo;
  for (const std::string& part : components(pathInImage)) todo.push_back(part);
  int hops = 0;
  while (!todo.empty()) {
    std::string part = todo.front();
    todo.pop_front();
    if (part == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    const std::string host = joinUnder(root, done) + "/" + part;
    struct stat st {};
    if (::lstat(host.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) {
      done.push_back(part);
      continue;
    }
    if (++hops > kMaxSymlinkHops) {
      throw IoError(fmt::format("staging {}: too many symlinks resolving {} in the image", root,
                                pathInImage));
    }
    std::error_code ec;
    const std::string target = fs::read_symlink(host, ec).string();
    if (!target.empty() && target.front() == '/') done.clear();
    std::vector<std::string> targetParts = components(target);
    todo.insert(todo.begin(), targetParts.begin(), targetParts.end());
  }
  return joinUnder(root, done);
}

void makeImageLayout(const std::string& root) {
  for (const char* dir :
       {"/proc", "/sys", "/dev", "/home", "/root", "/run", "/mnt", "/etc", "/.singularity.d/env",
        "/.singularity.d/libs", "/.singularity.d/actions"}) {
    makeFolder(root, dir, 0755);
  }
  makeFolder(root, "/tmp", 01777);
  makeFolder(root, "/var/tmp", 01777);
  makeFileIfMissing(root, "/etc/hosts", "", 0644);
  makeFileIfMissing(root, "/etc/resolv.conf", "", 0644);
  makeFileIfMissing(root, "/.singularity.d/actions/exec", kExecAction, 0755);
  makeFileIfMissing(root, "/.singularity.d/actions/run", kRunAction, 0755);
  makeFileIfMissing(root, "/.singularity.d/actions/shell", kShellAction, 0755);
}

void forgetBuildHost(const std::string& root, const std::string& hostRoot) {
  for (const char* file : {"/etc/resolv.conf", "/etc/hostname"}) {
    const std::string copy = resolveInRoot(root, file);
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(copy, ec))) continue;
    const std::string host = readFileIfPresent(hostRoot + file).value_or("");
    if (!host.empty() && readFileIfPresent(copy).value_or("") == host) fs::remove(copy, ec);
  }
}

std::string environmentLines(const std::vector<std::pair<std::string, std::string>>& env,
                             const std::vector<std::string>& paths) {
  std::string lines;
  for (const auto& [name, value] : env) {
    lines += fmt::format("export {}={}\n", name, shellQuote(value));
  }
  if (!paths.empty()) {
    lines +=
        fmt::format("PATH={}\"${{PATH:+:$PATH}}\"\nexport PATH\n", shellQuote(join(paths, ":")));
  }
  return lines;
}

void appendEnvironment(const std::string& root, const std::string& lines) {
  makeFolder(root, "/.singularity.d/env", 0755);
  const std::string path = resolveInRoot(root, kEnvFile);
  if (!present(path)) writeNewFile(path, kEnvHeader, 0755);
  std::ofstream file(path, std::ios::app);
  file << lines;
  file.flush();
  if (!file) throw IoError(fmt::format("staging {}: cannot write", path));
}

std::vector<std::string> mountsUnder(const std::string& path) {
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::vector<std::string> points;
  for (std::string line; std::getline(mountinfo, line);) {
    std::istringstream fields(line);
    std::string id, parent, devices, root, point;
    fields >> id >> parent >> devices >> root >> point;
    point = decodeMountPath(point);
    if (detail::atOrUnder(point, path)) points.push_back(point);
  }
  return points;
}

bool removeStaging(const std::string& path) {
  std::vector<std::string> points = mountsUnder(path);
  for (auto it = points.rbegin(); it != points.rend(); ++it) {
    if (::umount2(it->c_str(), MNT_DETACH) != 0 && errno != EINVAL) {
      throw IoError(
          fmt::format("staging folder {}: cannot detach the mount {}: {}: left in "
                      "place; unmount it, then remove the folder",
                      path, *it, std::strerror(errno)));
    }
  }
  std::error_code ec;
  fs::remove_all(path, ec);
  if (!ec) return true;
  makeFoldersWritable(path);  // a read-only folder of a --base, unpacked by a user
  fs::remove_all(path, ec);
  return !ec;
}

}  // namespace distrun::container
