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

AtomicOutput::FileBuffer::FileBuffer(int fd) : fd_(fd), buffer_(kBufferBytes) {
  setp(buffer_.data(), buffer_.data() + buffer_.size());
}

AtomicOutput::FileBuffer::int_type AtomicOutput::FileBuffer::overflow(int_type c) {
  if (!flushAll()) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) sputc(traits_type::to_char_type(c));
  return traits_type::not_eof(c);
}

bool AtomicOutput::FileBuffer::flushAll() {
  const char* data = pbase();
  const size_t size = static_cast<size_t>(pptr() - pbase());
  size_t done = 0;
  while (done < size && error_ == 0) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error_ = errno;
    if (n > 0) done += static_cast<size_t>(n);
  }
  setp(buffer_.data(), buffer_.data() + buffer_.size());
  return error_ == 0;
}

AtomicOutput::AtomicOutput(std::string path, std::string what)
    : path_(std::move(path)),
      what_(std::move(what)),
      tmp_(fmt::format("{}.tmp.{}", path_, ::getpid())),
      fd_(::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)),
      buffer_(fd_.get()),
      out_(&buffer_) {
  if (!fd_) fail(fmt::format("cannot create {}", tmp_), errno);
}

AtomicOutput::~AtomicOutput() {
  if (committed_) return;
  fd_.reset();
  ::unlink(tmp_.c_str());
}

void AtomicOutput::fail(const std::string& step, int err) const {
  throw IoError(fmt::format("{} {}: {}: {}", what_, path_, step,
                            err != 0 ? std::strerror(err) : "write error"));
}

void AtomicOutput::commit() {
  if (!buffer_.flushAll() || !out_) fail("cannot write it", buffer_.error());
  if (::fsync(fd_.get()) != 0) fail("cannot sync it", errno);
  fd_.reset();
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
