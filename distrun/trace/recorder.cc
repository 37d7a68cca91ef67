#include "distrun/trace/recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/trace/config.h"

namespace distrun::trace {

namespace {

// Room kept below the cap for the cap's own line (and its newline).
constexpr uint64_t kCapLineRoom = 64;

uint64_t sizeOf(int fd) {
  struct stat s {};
  return ::fstat(fd, &s) == 0 ? static_cast<uint64_t>(s.st_size) : 0;
}

// Where the file's whole lines end: after its last '\n' (0 if none).
uint64_t endOfWholeLines(int fd, uint64_t size) {
  char chunk[4096];
  uint64_t end = size;
  while (end > 0) {
    const uint64_t from = end > sizeof chunk ? end - sizeof chunk : 0;
    const ssize_t n = ::pread(fd, chunk, end - from, static_cast<off_t>(from));
    if (n <= 0) return size;  // unreadable: leave it as it is
    for (ssize_t i = n; i-- > 0;) {
      if (chunk[i] == '\n') return from + static_cast<uint64_t>(i) + 1;
    }
    end = from;
  }
  return 0;
}

// A part cut short by SIGKILL mid-write ends in a partial line; it is cut
// back to its whole lines, so that the next part starts on a line of its
// own and the file stays whole lines (the writer of that part is dead).
uint64_t cutPartialLine(int fd) {
  const uint64_t size = sizeOf(fd);
  const uint64_t whole = endOfWholeLines(fd, size);
  if (whole == size || ::ftruncate(fd, static_cast<off_t>(whole)) != 0) return size;
  return whole;
}

}  // namespace

Recorder::Recorder(RecorderOptions options, const Header& header, std::ostream& warnings)
    : options_(std::move(options)), warnings_(warnings) {
  fd_.reset(::open(options_.path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd_) {
    throw IoError(fmt::format("{} file {}: cannot open: {}", kFolderName, options_.path,
                              std::strerror(errno)));
  }
  bytes_ = cutPartialLine(fd_.get());
  const std::string first = headerLine(header);
  if (bytes_ + first.size() + 1 + kCapLineRoom > options_.maxBytes) {
    stopped_ = true;  // full already: nothing more, not even a header
  } else {
    write(first);
    flush();  // the header is on disk before the first event
  }
  if (options_.flushEvery.count() > 0) flusher_ = std::thread([this] { runFlusher(); });
}

Recorder::~Recorder() { close(); }

void Recorder::close() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  std::lock_guard lock(mutex_);
  flushLocked();
  writeThrough_ = true;
}

bool Recorder::write(std::string_view line) {
  std::lock_guard lock(mutex_);
  if (stopped_) return false;
  if (bytes_ + line.size() + 1 + kCapLineRoom > options_.maxBytes) {
    const std::string capped = cappedLine(options_.maxBytes);
    buffer_ += capped;
    buffer_ += '\n';
    bytes_ += capped.size() + 1;
    stopped_ = true;
    flushLocked();
    return false;
  }
  buffer_ += line;
  buffer_ += '\n';
  bytes_ += line.size() + 1;
  if (writeThrough_ || buffer_.size() >= options_.flushBytes) flushLocked();
  return true;
}

void Recorder::flush() {
  std::lock_guard lock(mutex_);
  flushLocked();
}

bool Recorder::stopped() const {
  std::lock_guard lock(mutex_);
  return stopped_;
}

void Recorder::flushLocked() {
  if (buffer_.empty()) return;
  std::string bytes;
  bytes.swap(buffer_);
  writeAll(bytes);
}

// One write(2) per flush in the usual case; a short write is continued.
void Recorder::writeAll(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size() && fd_) {
    const ssize_t n = ::write(fd_.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      warnings_ << fmt::format(
          "distrun: warning: {} file {}: cannot write: {}; the trace stops "
          "here\n",
          kFolderName, options_.path, std::strerror(errno));
      warnings_.flush();
      stopped_ = true;
      fd_.reset();
      return;
    }
    done += static_cast<size_t>(n);
  }
}

void Recorder::runFlusher() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, options_.flushEvery, [this] { return stopping_; });
    flushLocked();
  }
}

}  // namespace distrun::trace
