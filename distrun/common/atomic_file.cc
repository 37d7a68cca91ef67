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

constexpr size_t kBufferBytes = 1 << 20;

// fsync of a file or folder by name; the errno of the failing call, or 0.
int syncPath(const std::string& path, int flags) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd) return errno;
  return ::fsync(fd.get()) == 0 ? 0 : errno;
}

}  // namespace

void writeFileAtomically(const std::string& path, std::string_view contents,
                         const std::string& what) {
  AtomicOutput file(path, what);
  file.stream().write(contents.data(), static_cast<std::streamsize>(contents.size()));
  file.commit();
}

AtomicOutput::AtomicOutput(std::string path, std::string what)
    : path_(std::move(path)),
      what_(std::move(what)),
      tmp_(fmt::format("{}.tmp.{}", path_, ::getpid())),
      buffer_(new char[kBufferBytes]) {
  out_.rdbuf()->pubsetbuf(buffer_.get(), kBufferBytes);
  errno = 0;
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) fail(fmt::format("cannot create {}", tmp_), errno);
}

AtomicOutput::~AtomicOutput() {
  if (committed_) return;
  out_.close();
  ::unlink(tmp_.c_str());
}

void AtomicOutput::fail(const std::string& step, int err) const {
  throw IoError(fmt::format("{} {}: {}: {}", what_, path_, step,
                            err != 0 ? std::strerror(err) : "write error"));
}

void AtomicOutput::commit() {
  errno = 0;
  out_.flush();
  if (!out_) fail("cannot write it", errno);
  out_.close();
  if (!out_) fail("cannot write it", errno);
  if (int err = syncPath(tmp_, O_RDONLY)) fail("cannot sync it", err);
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    fail(fmt::format("cannot rename {} to it", tmp_), errno);
  }
  committed_ = true;
  // Built whole rather than assigned "." later: GCC 12's -Wrestrict misfires
  // on that assignment at -O2 (GCC bug 105329).
  const std::string parent = std::filesystem::path(path_).parent_path().string();
  const std::string folder = parent.empty() ? std::string(".") : parent;
  if (int err = syncPath(folder, O_RDONLY | O_DIRECTORY)) fail("cannot sync its folder", err);
}

}  // namespace distrun
