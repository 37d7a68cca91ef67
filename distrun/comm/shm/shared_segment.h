#pragma once

#include <cstddef>
#include <string>

namespace distrun::comm {

// A POSIX shared-memory segment (shm_open + mmap) that the ranks of one
// host map by name. The creator reserves every page up front
// (posix_fallocate), so a full /dev/shm is an error here and never a
// SIGBUS later. The name is removed (unlink) once every rank has opened it:
// from then on the segment lives exactly as long as the last mapping, and a
// crash leaves nothing behind in /dev/shm.
class SharedSegment {
 public:
  // Creates `name` ("/distrun-..."), `bytes` long and zero-filled. Replaces
  // a stale segment of the same name. Throws SystemError naming the name.
  static SharedSegment create(const std::string& name, size_t bytes);
  // Opens the segment another process created. Throws SystemError when it
  // is missing or shorter than `bytes`.
  static SharedSegment open(const std::string& name, size_t bytes);
  // Removes `name` from /dev/shm; mappings stay valid. Never throws.
  static void unlink(const std::string& name);

  SharedSegment() = default;
  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  SharedSegment(char* data, size_t size) : data_(data), size_(size) {}

  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace distrun::comm
