#include "distrun/container/internal/image_read.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace distrun::container::detail {

ImageError badImage(const std::string& path, const std::string& what) {
  return ImageError(ExitCode::kData, fmt::format("container image {}: {}", path, what));
}

ImageError unreadableImage(const std::string& path, const char* step, int err) {
  return ImageError(ExitCode::kNoInput, fmt::format("container image {}: cannot {}: {}", path, step,
                                                    std::strerror(err)));
}

std::string readUpTo(int fd, const std::string& path, uint64_t offset, size_t length) {
  std::string bytes(length, '\0');
  ssize_t n = -1;
  do {
    n = ::pread(fd, bytes.data(), length, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  if (n < 0) throw unreadableImage(path, "read", errno);
  bytes.resize(static_cast<size_t>(n));
  return bytes;
}

std::string readExactly(int fd, const std::string& path, int64_t offset, int64_t length) {
  std::string bytes(static_cast<size_t>(length), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done,
                        static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw unreadableImage(path, "read", errno);
    if (n == 0) throw badImage(path, "truncated: it shrank while being read");
    done += static_cast<size_t>(n);
  }
  return bytes;
}

}  // namespace distrun::container::detail
