#include "distrun/common/writable_file.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

namespace distrun {

namespace {

namespace fs = std::filesystem;

std::string folderOf(const std::string& path) {
  const std::string folder = fs::path(path).parent_path().string();
  return folder.empty() ? "." : folder;
}

[[noreturn]] void refuse(const std::string& what, const std::string& path,
                         const std::string& problem) {
  throw IoError(fmt::format("{} {}: {}", what, path, problem));
}

void checkFolder(const std::string& what, const std::string& path, const std::string& folder) {
  std::error_code ec;
  const fs::file_status status = fs::status(folder, ec);
  if (status.type() == fs::file_type::not_found) {
    refuse(what, path,
           fmt::format("the folder {} does not exist: create it, or choose another path", folder));
  }
  if (status.type() != fs::file_type::directory) {
    refuse(what, path,
           fmt::format("{} is not a folder{}: choose a path in a folder", folder,
                       ec ? " (" + ec.message() + ")" : ""));
  }
  if (fs::is_directory(path, ec)) {
    refuse(what, path, "it is a folder: name a file in it (" + path + "/FILE)");
  }
}

// Creates and removes a file beside `path`, as writeFileAtomically will.
void tryCreating(const std::string& what, const std::string& path, const std::string& folder) {
  std::string name = folder + "/.distrun-write-check.XXXXXX";
  std::vector<char> buffer(name.begin(), name.end());
  buffer.push_back('\0');
  UniqueFd fd(::mkstemp(buffer.data()));
  if (!fd) {
    refuse(what, path,
           fmt::format("cannot create a file in {}: {}: choose a folder you can write to", folder,
                       std::strerror(errno)));
  }
  ::unlink(buffer.data());
}

void checkSpace(const std::string& what, const std::string& path, const std::string& folder,
                uint64_t bytesNeeded) {
  struct statvfs fsInfo {};
  if (::statvfs(folder.c_str(), &fsInfo) != 0) return;  // unknown: the write will tell
  const uint64_t available = static_cast<uint64_t>(fsInfo.f_bavail) * fsInfo.f_frsize;
  if (available >= bytesNeeded) return;
  refuse(what, path,
         fmt::format("{} has {} free, writing it needs about {}: free some space, or choose "
                     "another folder",
                     folder, mebibytes(available), mebibytes(bytesNeeded)));
}

}  // namespace

void checkFileWritable(const std::string& path, const std::string& what, uint64_t bytesNeeded) {
  const std::string folder = folderOf(path);
  checkFolder(what, path, folder);
  tryCreating(what, path, folder);
  checkSpace(what, path, folder, bytesNeeded);
}

std::string mebibytes(uint64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

}  // namespace distrun
