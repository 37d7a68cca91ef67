#include "distrun/testing/container_tools.h"

#include <sys/mount.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

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
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::vector<std::string> points;
  for (std::string line; std::getline(mountinfo, line);) {
    std::istringstream fields(line);
    std::string id, parent, devices, root, point;
    fields >> id >> parent >> devices >> root >> point;
    if (point == dir || point.rfind(dir + "/", 0) == 0) points.push_back(point);
  }
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
