#include "distrun/common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

namespace distrun {

namespace {

// Names one failed step of an atomic write; `err` is the errno it set.
[[noreturn]] void fail(const std::string& what, const std::string& path, const std::string& step,
                       int err) {
  throw IoError(fmt::format("{} {}: {}: {}", what, path, step, std::strerror(err)));
}

void writeAll(int fd, std::string_view data, const std::string& what, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(what, path, "cannot write it", errno);
    done += static_cast<size_t>(n);
  }
}

void syncFolderOf(const std::string& path, const std::string& what) {
  // Built whole rather than assigned "." later: GCC 12's -Wrestrict misfires
  // on that assignment at -O2 (GCC bug 105329).
  const std::string parent = std::filesystem::path(path).parent_path().string();
  const std::string folder = parent.empty() ? std::string(".") : parent;
  UniqueFd fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) fail(what, path, "cannot open its folder to sync it", errno);
  if (::fsync(fd.get()) != 0) fail(what, path, "cannot sync its folder", errno);
}

// Writes and syncs the temporary file; throws with `path` named.
void writeTemporary(const std::string& tmp, std::string_view contents, const std::string& what,
                    const std::string& path) {
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) fail(what, path, fmt::format("cannot create {}", tmp), errno);
  writeAll(fd.get(), contents, what, path);
  if (::fsync(fd.get()) != 0) fail(what, path, "cannot sync it", errno);
}

}  // namespace

void writeFileAtomically(const std::string& path, std::string_view contents,
                         const std::string& what) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  try {
    writeTemporary(tmp, contents, what, path);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      fail(what, path, fmt::format("cannot rename {} to it", tmp), errno);
    }
  } catch (const IoError&) {
    ::unlink(tmp.c_str());
    throw;
  }
  syncFolderOf(path, what);
}

}  // namespace distrun
