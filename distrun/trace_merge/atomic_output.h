#pragma once

// A file written as a stream and put in place whole: what
// distrun::writeFileAtomically (common/atomic_file.h) does for contents
// held in memory, for output too large to hold (a merged trace).
#include <fstream>
#include <memory>
#include <string>

namespace distrun::trace_merge {

// Writes go to PATH.tmp.<pid> beside `path`; commit() flushes and fsyncs
// it, renames it over `path` and fsyncs the folder, so a reader (or a
// crash) sees the old file or the whole new one. Destroyed without commit
// (an error on the way), the temporary file is removed and `path` is
// untouched. `what` names the file in errors ("trace"). Not thread-safe.
//
// Throws IoError (exit 74) naming `what`, the path, the step and
// strerror(errno): from the constructor when the temporary file cannot be
// created, from commit() when a write, the sync or the rename failed.
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

}  // namespace distrun::trace_merge
