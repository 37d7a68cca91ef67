#include "distrun/container/own_runtime.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/container/internal/paths.h"
#include "distrun/container/staging_tree.h"

namespace distrun::container {

namespace {

bool isFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

bool isFolder(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// `name`'s value when it is a folder on this host (bwrap refuses to bind a
// missing source); else "".
std::string folderFrom(const Environment& env, const std::string& name) {
  std::string path = env.getOr(name, "");
  return isFolder(path) ? path : "";
}

std::string currentFolder() {
  std::string buffer(4096, '\0');
  if (::getcwd(buffer.data(), buffer.size()) == nullptr) {
    throw SystemError("getcwd", "the working directory", errno);
  }
  return buffer.c_str();
}

std::vector<HostBind> hostBinds(const std::vector<Bind>& binds) {
  std::vector<HostBind> out;
  for (const Bind& bind : binds) out.push_back(HostBind{bind, isFile(bind.source)});
  return out;
}

std::vector<std::string> hostFiles() {
  std::vector<std::string> files;
  for (const char* file : {"/etc/hosts", "/etc/resolv.conf", "/etc/passwd", "/etc/group"}) {
    if (isFile(file)) files.push_back(file);
  }
  return files;
}

// Apptainer's environment scripts apply when the image has some and a
// shell to source them.
bool hasEnvScripts(const std::string& scripts, const std::string& shell) {
  if (::access(shell.c_str(), X_OK) != 0) return false;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(scripts, ignored)) {
    if (entry.path().extension() == ".sh") return true;
  }
  return false;
}

// The GPU and accelerator device nodes the bound /dev shows.
std::vector<std::string> gpuDevices() {
  std::vector<std::string> names;
  DIR* dev = ::opendir("/dev");
  if (dev == nullptr) return names;
  while (const dirent* entry = ::readdir(dev)) {
    std::string name = entry->d_name;
    if (name.rfind("nvidia", 0) == 0 || name == "kfd" || name == "dri") names.push_back(name);
  }
  ::closedir(dev);
  std::sort(names.begin(), names.end());
  return names;
}

// `pathInImage` resolved inside the image at `root`, as a program inside
// sees it; a loop of links leaves the path unresolved (nothing is there).
std::string resolveInImage(const std::string& pathInImage, const std::string& root) {
  try {
    return resolveInRoot(root, pathInImage);
  } catch (const IoError&) {
    return root + pathInImage;
  }
}

}  // namespace

std::string sandboxToolPath() {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  std::string tool = (self.parent_path() / "distrun-sandbox").string();
  if (error || ::access(tool.c_str(), X_OK) != 0) {
    throw ConfigError(
        fmt::format("distrun's container runtime needs distrun-sandbox beside {}, "
                    "and it is not there: build distrun whole (cmake --build), or "
                    "install it whole (cmake --install)",
                    self.string()));
  }
  return tool;
}

std::string mountKey(const ImageFile& image, const Environment& env) {
  std::string key = image.identity;
  std::replace(key.begin(), key.end(), ':', '-');
  std::optional<std::string> job = env.get("SLURM_JOB_ID");
  if (job && !job->empty()) key += fmt::format("-job{}.{}", *job, env.getOr("SLURM_STEP_ID", "0"));
  return key;
}

std::string hostPathOf(const std::string& pathInImage, const std::string& imageRoot,
                       const std::vector<SandboxMount>& mounts) {
  const SandboxMount* under = nullptr;
  for (const SandboxMount& mount : mounts) {
    bool deeper = under == nullptr || mount.destination.size() >= under->destination.size();
    if (detail::atOrUnder(pathInImage, mount.destination) && deeper) under = &mount;
  }
  if (under != nullptr) return under->source + pathInImage.substr(under->destination.size());
  return resolveInImage(pathInImage, imageRoot);
}

OwnRuntimeSession::OwnRuntimeSession(const ContainerRequest& request, const ImageFile& image,
                                     const Runtime& runtime, const Environment& env)
    : image_(image), folder_(env.getOr("PATH", "/usr/bin:/bin")) {
  spec_.sandboxTool = sandboxToolPath();
  MountMethod method = mountMethodFrom(env);
  std::string base = nodeMountBase(env);
  std::string key = mountKey(image, env);
  cleanStaleMounts(base, folder_, key);
  mount_ = std::make_unique<NodeMount>(
      base, key, [&](const std::string& root) { return mountImage(image, root, method, env); },
      folder_);
  spec_.bwrap = runtime.executable;
  spec_.imageRoot = mount_->root();
  spec_.image = image.path;
  spec_.binds = hostBinds(request.binds);
  spec_.home = folderFrom(env, "HOME");
  spec_.tmpdir = folderFrom(env, "TMPDIR");
  spec_.hostFiles = hostFiles();
  workingDir_ = currentFolder();
  spec_.envScripts =
      hasEnvScripts(hostPath("/.singularity.d/env").value(), hostPath("/bin/sh").value());
}

std::vector<std::string> OwnRuntimeSession::command(const std::vector<std::string>& program,
                                                    const std::string& workingDir) const {
  return sandboxCommand(spec_, HostImageTree(spec_.imageRoot), program, workingDir);
}

ContainerSession::DirectCommand OwnRuntimeSession::directCommand(
    const std::vector<std::string>& program, const std::string& workingDir) const {
  return {bwrapCommand(spec_, HostImageTree(spec_.imageRoot), program, workingDir), true};
}

std::string OwnRuntimeSession::describe() const {
  std::vector<std::string> gpus = gpuDevices();
  std::string mount = mount_->mountedHere()
                          ? fmt::format("mounted by {}", mount_->how())
                          : fmt::format("joined the node's mount ({})", mount_->how());
  return fmt::format(
      "container {} ({}): distrun's runtime, {} at {}; each program enters it with bubblewrap "
      "({}), the host's /dev bound{}",
      image_.path, formatName(image_.format), mount, mount_->root(), spec_.bwrap,
      gpus.empty() ? " (no GPU devices)" : fmt::format(" (GPU devices: {})", join(gpus, " ")));
}

std::optional<std::string> OwnRuntimeSession::hostPath(const std::string& pathInImage) const {
  return hostPathOf(pathInImage, spec_.imageRoot, sandboxMounts(spec_, workingDir_));
}

}  // namespace distrun::container
