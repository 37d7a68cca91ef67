#include "distrun/comm/shm/shared_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

namespace distrun::comm {

namespace {

char* mapShared(int fd, size_t bytes, const std::string& name) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw SystemError("mmap", name, errno);
  return static_cast<char*>(p);
}

}  // namespace

SharedSegment SharedSegment::create(const std::string& name, size_t bytes) {
  ::shm_unlink(name.c_str());  // a segment left by a process that reused our pid
  // The descriptor is closed once the mapping is made (or on error).
  UniqueFd fd(::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600));
  if (fd.get() < 0) throw SystemError("shm_open", name, errno);
  // posix_fallocate returns the error number instead of setting errno.
  if (const int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes)); err != 0) {
    ::shm_unlink(name.c_str());
    throw SystemError("posix_fallocate", name + ", " + std::to_string(bytes) + " bytes", err);
  }
  try {
    return SharedSegment(mapShared(fd.get(), bytes, name), bytes);
  } catch (...) {
    ::shm_unlink(name.c_str());
    throw;
  }
}

SharedSegment SharedSegment::open(const std::string& name, size_t bytes) {
  UniqueFd fd(::shm_open(name.c_str(), O_RDWR, 0));
  if (fd.get() < 0) throw SystemError("shm_open", name, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw SystemError("fstat", name, errno);
  if (static_cast<size_t>(st.st_size) < bytes) {
    throw SystemError("shm_open",
                      name + ": " + std::to_string(st.st_size) + " bytes where " +
                          std::to_string(bytes) + " were expected",
                      EINVAL);
  }
  return SharedSegment(mapShared(fd.get(), bytes, name), bytes);
}

void SharedSegment::unlink(const std::string& name) { ::shm_unlink(name.c_str()); }

SharedSegment::SharedSegment(SharedSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedSegment::~SharedSegment() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace distrun::comm
