#pragma once

#include <utility>

namespace distrun {

// Owns one file descriptor and closes it when destroyed or reset: the one
// place in distrun that calls close(2). Move-only; -1 means "none". Not
// thread-safe (like the descriptor it holds). Close errors are ignored on
// purpose: by then the data was written (callers that need it durable
// fsync first, as writeFileAtomically does), and POSIX leaves the
// descriptor closed whatever close() returned, so retrying would be wrong.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  // Gives up ownership without closing; returns the descriptor.
  int release() { return std::exchange(fd_, -1); }
  // Closes the held descriptor (if any) and takes `fd`.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

}  // namespace distrun
