#include "distrun/container/node_mount.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "distrun/common/atomic_file.h"
#include "distrun/common/error.h"

namespace distrun::container {

namespace {

constexpr const char* kGate = "gate";
constexpr const char* kUsers = "users";
constexpr const char* kHow = "how";
constexpr const char* kRoot = "root";

int lockRetrying(int fd, int operation) {
  int result;
  do {
    result = ::flock(fd, operation);
  } while (result != 0 && errno == EINTR);
  return result;
}

bool tryLock(int fd, int operation) { return lockRetrying(fd, operation | LOCK_NB) == 0; }

// Whether `fd` is still the file at `path` (not removed or replaced).
bool isFileAt(int fd, const std::string& path) {
  struct stat held {
  }, named{};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
         held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

void makeFolder(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    throw SystemError("mkdir", path, errno);
  }
}

// The gate of folder `dir`, held exclusively; made if missing.
UniqueFd lockGate(const std::string& dir) {
  const std::string path = dir + "/" + kGate;
  for (;;) {
    makeFolder(dir, 0700);
    UniqueFd gate(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!gate && errno == ENOENT) continue;  // a leaver removed `dir` meanwhile
    if (!gate) throw SystemError("open", path, errno);
    if (lockRetrying(gate.get(), LOCK_EX) != 0) throw SystemError("flock", path, errno);
    if (isFileAt(gate.get(), path)) return gate;
  }
}

// The gate of an existing folder, if nobody holds it now.
UniqueFd tryLockGate(const std::string& dir) {
  const std::string path = dir + "/" + kGate;
  UniqueFd gate(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!gate || !tryLock(gate.get(), LOCK_EX) || !isFileAt(gate.get(), path)) return UniqueFd();
  return gate;
}

UniqueFd openUsers(const std::string& dir) {
  const std::string path = dir + "/" + kUsers;
  UniqueFd users(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!users) throw SystemError("open", path, errno);
  return users;
}

std::string readHow(const std::string& dir) {
  std::ifstream in(dir + "/" + kHow);
  std::string how;
  std::getline(in, how);
  return how;
}

// With the gate and `users` held exclusively: the folder's mount and files
// go, the gate file last, so that whoever opens the gate's path afterwards
// makes a new folder and finds nothing of this one.
void removeFolder(const std::string& dir, MountFolder& folder) {
  folder.clear(dir + "/" + kRoot);
  for (const char* name : {kHow, kUsers, kGate}) ::unlink((dir + "/" + name).c_str());
  ::rmdir(dir.c_str());  // fails harmlessly when a joiner has made a new gate already
}

// The folder's mount, if unused: cleared and removed. True when it was.
bool removeIfUnused(const std::string& dir, MountFolder& folder) {
  UniqueFd gate = tryLockGate(dir);
  if (!gate) return false;
  UniqueFd users(::open((dir + "/" + kUsers).c_str(), O_RDWR | O_CLOEXEC));
  if (users && !tryLock(users.get(), LOCK_EX)) return false;
  removeFolder(dir, folder);
  return true;
}

std::vector<std::string> folderNames(const std::string& base) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(base.c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

}  // namespace

std::string nodeMountBase(const Environment& env) {
  std::string base = userFolder(env) + "/containers";
  makeFolder(base, 0700);
  return base;
}

NodeMount::NodeMount(const std::string& base, const std::string& key, const MountFunction& mount,
                     MountFolder& folder)
    : dir_(base + "/" + key), root_(dir_ + "/" + kRoot), folder_(folder) {
  join(mount);
}

void NodeMount::join(const MountFunction& mount) {
  UniqueFd gate = lockGate(dir_);
  users_ = openUsers(dir_);
  try {
    if (tryLock(users_.get(), LOCK_EX)) {
      mountAfresh(mount);  // nobody uses the folder: what is there is stale
    } else {
      how_ = readHow(dir_);
      if (!folder_.usable(root_, how_)) mountAfresh(mount);
    }
  } catch (...) {
    abandon();
    throw;
  }
  // Converting an exclusive lock is not atomic, but every exclusive taker
  // holds the gate first, so nobody can come between.
  if (lockRetrying(users_.get(), LOCK_SH) != 0) throw SystemError("flock", dir_ + "/users", errno);
}

// After a failed mount, with the gate held: no share taken, and the folder
// removed when nobody else uses it. The mount's own error is what matters.
void NodeMount::abandon() noexcept {
  try {
    if (tryLock(users_.get(), LOCK_EX)) removeFolder(dir_, folder_);
  } catch (...) {
    // Left for the next open() or cleanStaleMounts.
  }
  users_.reset();
}

void NodeMount::mountAfresh(const MountFunction& mount) {
  folder_.clear(root_);
  ::unlink((dir_ + "/" + kHow).c_str());
  how_ = mount(root_);
  writeFileAtomically(dir_ + "/" + kHow, how_ + "\n", "container mount record");
  mountedHere_ = true;
}

NodeMount::~NodeMount() {
  try {
    UniqueFd gate = lockGate(dir_);
    lockRetrying(users_.get(), LOCK_UN);
    if (tryLock(users_.get(), LOCK_EX)) removeFolder(dir_, folder_);
  } catch (...) {
    // Left for the next open() or cleanStaleMounts: the locks go with us.
  }
}

int cleanStaleMounts(const std::string& base, MountFolder& folder, const std::string& except) {
  int removed = 0;
  for (const std::string& name : folderNames(base)) {
    if (name == except) continue;
    try {
      if (removeIfUnused(base + "/" + name, folder)) ++removed;
    } catch (...) {
      // This one stays for a later call; the others are still worth clearing.
    }
  }
  return removed;
}

}  // namespace distrun::container
