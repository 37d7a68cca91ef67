#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "distrun/common/unique_fd.h"
#include "distrun/trace/event.h"

namespace distrun::trace {

struct RecorderOptions {
  std::string path;                           // the file, appended to (created 0644)
  uint64_t maxBytes = uint64_t{100} << 20;    // the file's cap, earlier parts included
  size_t flushBytes = size_t{64} << 10;       // buffered before a write
  std::chrono::milliseconds flushEvery{500};  // the flusher's period; 0: no flusher thread
};

// One trace file: whole lines, buffered in memory and appended with
// O_APPEND writes of whole lines only, when flushBytes are buffered, by a
// flusher thread every flushEvery, and on flush() or destruction. A
// process killed by SIGKILL leaves complete lines, and at most one partial
// last line (a write cut short), with at most flushEvery of events lost.
//
// The cap: a line that would take the file past maxBytes (room kept for
// the cap's own line) is dropped; the first one writes
// {"trace_capped":{"bytes":maxBytes}} and every later line is dropped.
// A file that is already full (an earlier part, a restarted worker's)
// gets nothing. An earlier part that ends in a partial line (its process
// was killed mid-write) is first cut back to its last whole line. A write that fails (disk full)
// prints one warning on `warnings` and stops the recording the same way, without a cap line.
//
// Thread-safe: write() from any thread.
class Recorder {
 public:
  // Opens (creates) the file and writes `header` as its first line.
  // Throws IoError (exit 74) "DISTRUN_TRACE (--trace) file PATH: cannot
  // open: REASON".
  Recorder(RecorderOptions options, const Header& header, std::ostream& warnings);
  ~Recorder();  // stops the flusher, writes what is buffered
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Appends `line` (one JSON object, no newline). False when it was
  // dropped: the file is capped or failed.
  bool write(std::string_view line);
  // Writes what is buffered now.
  void flush();
  // Stops the flusher and writes what is buffered; later lines are
  // written at once (the process is exiting).
  void close();
  // Whether lines are dropped from now on.
  bool stopped() const;
  const std::string& path() const { return options_.path; }

 private:
  void flushLocked();
  void writeAll(const std::string& bytes);
  void runFlusher();

  RecorderOptions options_;
  std::ostream& warnings_;
  UniqueFd fd_;
  mutable std::mutex mutex_;
  std::string buffer_;
  uint64_t bytes_ = 0;  // the file's size with the buffer written
  bool stopped_ = false;
  bool stopping_ = false;
  bool writeThrough_ = false;  // after close()
  std::condition_variable wake_;
  std::thread flusher_;
};

}  // namespace distrun::trace
