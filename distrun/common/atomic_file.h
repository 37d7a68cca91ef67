#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "distrun/common/unique_fd.h"

namespace distrun {

// Replaces `path` with `contents` so that a reader (or a crash at any
// moment) sees either the old file or the whole new one, never a part:
// the bytes go to a temporary file beside it (`path.tmp.<pid>`), which is
// fsynced, renamed over `path`, and then the folder is fsynced so the
// rename itself is durable. `what` names the file in errors, in the
// user's words ("snapshot", "--metrics", "failure report").
//
// Throws IoError naming `what`, the path, the step that failed and
// strerror(errno): the folder is missing or not writable, the disk is
// full, ... The temporary file is removed on failure; `path` is untouched.
void writeFileAtomically(const std::string& path, std::string_view contents,
                         const std::string& what);

// The same for a file written as a stream, too large to hold in memory (a
// merged trace): writes go to `path.tmp.<pid>`; commit() flushes and syncs
// it, renames it over `path` and syncs the folder. Destroyed without
// commit (an error on the way), the temporary file is removed and `path`
// is untouched. Not thread-safe.
//
// Throws IoError as writeFileAtomically does: from the constructor when
// the temporary file cannot be created, from commit() when a write, the
// sync or the rename failed.
class AtomicOutput {
  // A buffer over a descriptor that keeps the errno of a failed write
  // (std::ofstream forgets it: a full disk would read "write error").
  class FileBuffer : public std::streambuf {
   public:
    explicit FileBuffer(int fd);
    bool flushAll();  // false on a failed write; error() is its errno
    int error() const { return error_; }

   protected:
    int_type overflow(int_type c) override;
    int sync() override { return flushAll() ? 0 : -1; }

   private:
    int fd_;
    int error_ = 0;
    std::vector<char> buffer_;
  };

 public:
  AtomicOutput(std::string path, std::string what);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  std::ostream& stream() { return out_; }
  void commit();

 private:
  [[noreturn]] void fail(const std::string& step, int err) const;

  std::string path_;
  std::string what_;
  std::string tmp_;
  UniqueFd fd_;
  FileBuffer buffer_;
  std::ostream out_;
  bool committed_ = false;
};

}  // namespace distrun
