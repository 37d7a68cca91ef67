#include "distrun/testing/container_tools.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "distrun/common/unique_fd.h"
#include "distrun/container/staging_tree.h"
#include "distrun/testing/command.h"

namespace distrun::testing {

namespace {

const std::map<std::string, std::string>& packageOf() {
  static const std::map<std::string, std::string> packages = {
      {"mmdebstrap", "mmdebstrap"},
      {"mksquashfs", "squashfs-tools"},
      {"unsquashfs", "squashfs-tools"},
      {"squashfuse", "squashfuse"},
      {"fusermount3", "fuse3"},
      {"bwrap", "bubblewrap"},
      {"go", "golang-go"},
  };
  return packages;
}

bool onPath(const std::string& program) {
  return runCommand("command -v " + quote(program) + " >/dev/null").exitCode == 0;
}

// Lazily unmounts every mount at or under `dir`, deepest first, so removing
// the folder never descends into an image or a bound host folder.
void unmountUnder(const std::string& dir) {
  std::vector<std::string> points = container::mountsUnder(dir);
  for (auto it = points.rbegin(); it != points.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
}

}  // namespace

std::string containerToolsMissing(std::initializer_list<std::string> programs) {
  for (const std::string& program : programs) {
    if (onPath(program)) continue;
    auto it = packageOf().find(program);
    std::string package = it == packageOf().end() ? program : it->second;
    return "needs " + program + " (Debian package " + package +
           "; scripts/install-deps installs it)";
  }
  for (const std::string& program : programs) {
    bool fuse = program == "squashfuse" || program == "fusermount3";
    if (fuse && ::access("/dev/fuse", R_OK | W_OK) != 0) return "needs /dev/fuse for " + program;
  }
  return "";
}

namespace {

// What the cached image depends on besides the arguments.
std::string imageInputs() {
  std::string inputs = slurp("/etc/apt/sources.list");
  for (const auto& entry : std::filesystem::directory_iterator("/etc/apt/sources.list.d")) {
    inputs += slurp(entry.path().string());
  }
  for (const char* source :
       {"sif_writer.cc", "image_build.cc", "staging_tree.cc", "debian_sources.cc", "pip_env.cc"}) {
    inputs += slurp(sourcePath(std::string("distrun/container/") + source));
  }
  return inputs;
}

std::string cacheDir() {
  const char* dir = std::getenv("DISTRUN_TEST_CACHE");
  return dir != nullptr && *dir != '\0' ? dir : "/var/tmp/distrun-test-cache";
}

}  // namespace

std::string cachedImage(const std::vector<std::string>& wrapArguments) {
  std::string key = imageInputs();
  std::string args;
  for (const std::string& a : wrapArguments) args += " " + quote(a);
  key += args;
  std::string image = cacheDir() + "/" + std::to_string(std::hash<std::string>{}(key)) + ".sif";
  if (std::filesystem::exists(image)) return image;
  std::filesystem::create_directories(cacheDir());
  // One build at a time: tests running in parallel wait for the first.
  UniqueFd lock(::open((image + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644));
  if (lock) ::flock(lock.get(), LOCK_EX);
  if (std::filesystem::exists(image)) return image;
  CommandResult r = runCommand("timeout 900 " + quote(binaryPath("distrun")) + " wrap -q -o " +
                               quote(image) + args + " 2>&1");
  if (r.exitCode != 0) {
    ADD_FAILURE() << "distrun wrap" << args << " failed (" << r.exitCode << "): " << r.out;
    return "";
  }
  return image;
}

// Debian's PyTorch, and the libraries distrun-train and distrun-bench load
// that it does not pull in, so one image serves Python and distrun's own.
std::string torchImage() {
  return cachedImage({"--apt",
                      "python3-torch,libgloo0,libfmt9,libhwloc15,libopenmpi3,"
                      "libopenblas0-openmp"});
}

std::vector<std::string> imageMounts(const std::string& image) {
  struct stat st {};
  if (::stat(image.c_str(), &st) != 0) return {};
  // The node mount's folder is named by the image's identity, DEV-INODE-SIZE-...
  const std::string key = "/containers/" + std::to_string(st.st_dev) + "-" +
                          std::to_string(st.st_ino) + "-" + std::to_string(st.st_size) + "-";
  std::vector<std::string> points;
  for (const std::string& point : container::mountsUnder("/")) {
    if (point.find(key) != std::string::npos) points.push_back(point);
  }
  return points;
}

ScratchDir::ScratchDir(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  std::string pattern = base + "/distrun-" + name + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) pattern.clear();
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  unmountUnder(path_);
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace distrun::testing
