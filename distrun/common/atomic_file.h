#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <string_view>

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
  std::unique_ptr<char[]> buffer_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace distrun
