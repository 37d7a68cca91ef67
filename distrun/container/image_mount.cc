#include "distrun/container/image_mount.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/tool_process.h"
#include "distrun/common/unique_fd.h"
#include "distrun/container/runtime_command.h"
#include "distrun/container/staging_tree.h"

namespace distrun::container {

namespace {

constexpr int kLoopTries = 8;  // other processes may take a free loop device first

bool isRoot() { return ::geteuid() == 0; }

void makeEmptyFolder(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) throw SystemError("mkdir", path, errno);
}

std::string lastLine(const std::string& text) {
  std::string trimmed(trim(text));
  size_t at = trimmed.rfind('\n');
  return at == std::string::npos ? trimmed : trimmed.substr(at + 1);
}

// Sets the loop device up on the image's file system, read-only, to be
// detached when its last user (the mount) goes. 0 or an errno.
int configureLoop(int loop, int file, const ImageFile& image) {
  loop_config config{};
  config.fd = static_cast<uint32_t>(file);
  config.info.lo_offset = image.rootOffset;
  config.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
  std::strncpy(reinterpret_cast<char*>(config.info.lo_file_name), image.path.c_str(),
               LO_NAME_SIZE - 1);
  if (::ioctl(loop, LOOP_CONFIGURE, &config) == 0) return 0;
  if (errno != EINVAL && errno != ENOTTY) return errno;
  // Kernels before 5.8 have no LOOP_CONFIGURE: the same in two steps.
  if (::ioctl(loop, LOOP_SET_FD, file) != 0) return errno;
  if (::ioctl(loop, LOOP_SET_STATUS64, &config.info) == 0) return 0;
  int e = errno;
  ::ioctl(loop, LOOP_CLR_FD, 0);
  return e;
}

// mount(2) on a loop device of our own rather than `mount -o loop`: no
// dependence on util-linux's loop handling, autoclear guaranteed, a race
// for a free device retried here, and errno for the message.
std::string mountByLoop(const ImageFile& image, const std::string& root) {
  UniqueFd file(::open(image.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file) throw SystemError("open", image.path, errno);
  UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) throw SystemError("open", "/dev/loop-control", errno);
  for (int attempt = 0; attempt < kLoopTries; ++attempt) {
    int number = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (number < 0) throw SystemError("ioctl", "/dev/loop-control LOOP_CTL_GET_FREE", errno);
    std::string device = fmt::format("/dev/loop{}", number);
    UniqueFd loop(::open(device.c_str(), O_RDONLY | O_CLOEXEC));
    if (!loop) throw SystemError("open", device, errno);
    int e = configureLoop(loop.get(), file.get(), image);
    if (e == EBUSY) continue;
    if (e != 0) throw SystemError("ioctl", device + " LOOP_CONFIGURE", e);
    makeEmptyFolder(root);
    if (::mount(device.c_str(), root.c_str(), "squashfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                nullptr) != 0) {
      throw SystemError("mount", device + " on " + root, errno);
    }
    return "loop " + device;
  }
  throw SystemError(ExitCode::kSystem,
                    fmt::format("no free loop device after {} tries", kLoopTries));
}

// squashfuse daemonises: the mount outlives the process that made it, as
// the protocol needs (the last user unmounts, whoever it is). Its daemon
// must not become this process's orphan: an agent is a child subreaper and
// kills the orphans it adopts when its workers are done.
std::string mountBySquashfuse(const ImageFile& image, const std::string& root,
                              const std::string& path) {
  std::optional<std::string> tool = findOnPath("squashfuse_ll", path);
  if (!tool) tool = findOnPath("squashfuse", path);
  if (!tool) {
    throw SystemError(ExitCode::kSystem,
                      "squashfuse is not on PATH: install the Debian package "
                      "squashfuse");
  }
  if (::access("/dev/fuse", R_OK | W_OK) != 0) throw SystemError("access", "/dev/fuse", errno);
  makeEmptyFolder(root);
  int subreaper = 0;
  ::prctl(PR_GET_CHILD_SUBREAPER, &subreaper);
  if (subreaper != 0) ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  ToolResult result =
      runTool({*tool, "-o", fmt::format("offset={}", image.rootOffset), image.path, root});
  if (subreaper != 0) ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::string name = std::filesystem::path(*tool).filename();
  if (result.exitCode != 0) {
    throw SystemError(ExitCode::kSystem, fmt::format("{} exited with {}: {}", name, result.exitCode,
                                                     lastLine(result.err)));
  }
  return name;
}

// Unpacked beside `root` and renamed into place, so that a killed unpack
// leaves only ROOT.partial, which clear() removes.
std::string unpack(const ImageFile& image, const std::string& root, const std::string& path) {
  std::optional<std::string> tool = findOnPath("unsquashfs", path);
  if (!tool) {
    throw SystemError(ExitCode::kSystem,
                      "unsquashfs is not on PATH: install the Debian package "
                      "squashfs-tools");
  }
  std::string partial = root + ".partial";
  std::vector<std::string> argv = {
      *tool, "-no-progress", "-o", std::to_string(image.rootOffset), "-d", partial, image.path};
  if (!isRoot()) argv.insert(argv.begin() + 1, "-no-xattrs");
  ToolResult result = runTool(argv);
  // 2: non-fatal errors, which a user meets for device files and owners.
  if (result.exitCode != 0 && !(result.exitCode == 2 && !isRoot())) {
    throw SystemError(ExitCode::kSystem, fmt::format("unsquashfs exited with {}: {}",
                                                     result.exitCode, lastLine(result.err)));
  }
  ::rmdir(root.c_str());
  if (::rename(partial.c_str(), root.c_str()) != 0) throw SystemError("rename", partial, errno);
  return "unpack";
}

std::string mountBy(MountMethod method, const ImageFile& image, const std::string& root,
                    const std::string& path) {
  switch (method) {
    case MountMethod::kLoop:
      return mountByLoop(image, root);
    case MountMethod::kSquashfuse:
      return mountBySquashfuse(image, root, path);
    case MountMethod::kUnpack:
    case MountMethod::kAuto:
      break;
  }
  return unpack(image, root, path);
}

std::string variableValue(MountMethod method) {
  switch (method) {
    case MountMethod::kLoop:
      return "loop";
    case MountMethod::kSquashfuse:
      return "squashfuse";
    case MountMethod::kUnpack:
      return "unpack";
    case MountMethod::kAuto:
      break;
  }
  return "auto";
}

std::string methodName(MountMethod method) {
  switch (method) {
    case MountMethod::kLoop:
      return "kernel loop mount";
    case MountMethod::kSquashfuse:
      return "squashfuse";
    case MountMethod::kUnpack:
      return "unsquashfs";
    case MountMethod::kAuto:
      break;
  }
  return "auto";
}

void detach(const std::string& point, const std::string& path) {
  if (isRoot()) {
    ::umount2(point.c_str(), MNT_DETACH);
    return;
  }
  std::optional<std::string> fusermount = findOnPath("fusermount3", path);
  if (fusermount) runTool({*fusermount, "-u", "-z", point});
}

}  // namespace

MountMethod mountMethodFrom(const Environment& env) {
  std::string text = env.getOr(kMountMethodVariable, "auto");
  if (text == "auto" || text.empty()) return MountMethod::kAuto;
  if (text == "loop") return MountMethod::kLoop;
  if (text == "squashfuse") return MountMethod::kSquashfuse;
  if (text == "unpack") return MountMethod::kUnpack;
  throw ConfigError(
      fmt::format("{}={}: expected auto, loop, squashfuse or unpack (how distrun's "
                  "container runtime makes the image readable on a node)",
                  kMountMethodVariable, text));
}

std::string mountImage(const ImageFile& image, const std::string& root, MountMethod method,
                       const Environment& env) {
  const std::string path = env.getOr("PATH", "/usr/bin:/bin");
  std::vector<MountMethod> ways = {method};
  if (method == MountMethod::kAuto) ways = {MountMethod::kSquashfuse, MountMethod::kUnpack};
  if (method == MountMethod::kAuto && isRoot()) ways.insert(ways.begin(), MountMethod::kLoop);
  std::vector<std::string> failures;
  for (MountMethod way : ways) {
    try {
      return mountBy(way, image, root, path);
    } catch (const SystemError& e) {
      failures.push_back(fmt::format("{}: {}", methodName(way), e.what()));
    }
  }
  throw SystemError(ExitCode::kSystem,
                    fmt::format("cannot mount the container image {} on this node: {}{}",
                                image.path, join(failures, "; "),
                                method == MountMethod::kAuto
                                    ? ""
                                    : fmt::format(" ({}={}: unset it to try every way)",
                                                  kMountMethodVariable, variableValue(method))));
}

bool HostMountFolder::usable(const std::string& root, const std::string& how) const {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;  // ENOTCONN: dead
  std::vector<std::string> points = mountsUnder(root);
  bool mounted = std::find(points.begin(), points.end(), root) != points.end();
  return how == "unpack" ? !mounted : mounted;
}

void HostMountFolder::clear(const std::string& root) {
  std::vector<std::string> points = mountsUnder(root);  // in mount order: children last
  for (auto it = points.rbegin(); it != points.rend(); ++it) detach(*it, path_);
  std::vector<std::string> left = mountsUnder(root);
  if (!left.empty()) {
    throw SystemError(ExitCode::kSystem,
                      fmt::format("cannot unmount {}: it is still mounted after a lazy "
                                  "unmount: unmount it by hand (fusermount3 -u -z {})",
                                  left.front(), left.front()));
  }
  for (const std::string& folder : {root, root + ".partial"}) {
    if (!removeStaging(folder)) {
      throw SystemError(ExitCode::kSystem,
                        fmt::format("cannot remove {}: some files in it stay: remove it by "
                                    "hand",
                                    folder));
    }
  }
}

}  // namespace distrun::container
