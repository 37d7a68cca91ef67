#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace distrun {

// A worker's status record (docs/launcher.md, "Status records"): one text
// line on its progress pipe (DISTRUN_PROGRESS_FD), read by its agent for
// the live status line. The one home of the format:
//
//   status epoch=2 epochs=3 step=120 steps=500 loss=0.2345 samples_per_s=812.5
//
// "status", then space-separated key=value fields in any order, ended by a
// newline; every field is optional, unknown keys are skipped (so that new
// fields may come), a field whose value does not parse is dropped. Bytes
// outside records ('.' per step) still count as progress for
// --hang-timeout. The agent adds what it derives (eta_s, slowest_rank,
// slowest_step) to the record it writes to its status file. A plain value.
struct StatusRecord {
  std::optional<int64_t> epoch;            // 1-based
  std::optional<int64_t> epochs;           // of the whole run
  std::optional<int64_t> step;             // steps done in this epoch
  std::optional<int64_t> steps;            // in this epoch
  std::optional<double> loss;              // the epoch's running mean loss
  std::optional<double> samplesPerSecond;  // the job's, all ranks, as the worker estimates it
  std::optional<double> etaSeconds;        // agent: until the last step of the last epoch
  std::optional<int64_t> slowestRank;      // agent: the rank with the fewest steps it sees
  std::optional<int64_t> slowestStep;      // agent: that rank's step

  bool operator==(const StatusRecord&) const = default;
};

// The record as one line, newline included, short fields first; fields
// that are unset are left out. Doubles with at most 6 significant digits.
std::string formatStatusRecord(const StatusRecord& record);

// The record on `line` (no newline): the text from its last "status" word
// on, so that bytes written before it on the same line ('.' reports) are
// skipped. nullopt when the line holds no "status" word.
std::optional<StatusRecord> parseStatusRecord(std::string_view line);

// The human words of a record, for a status line: "epoch 2/3  step 120/500
// loss 0.2345  812 samples/s  ETA 1:23  slowest rank 1 (step 118)", each
// part present when its fields are. Empty for a record without fields.
std::string describeStatus(const StatusRecord& record);

// Seconds as "42 s", "1:23", "1:02:03" (rounded to whole seconds).
std::string formatDuration(double seconds);

// Splits the bytes of a progress pipe into records and keeps the latest.
// '.' and newlines between records are progress reports, skipped; a line
// longer than kMaxLine is dropped whole. Not thread-safe.
class StatusRecordReader {
 public:
  static constexpr size_t kMaxLine = 1024;

  void feed(std::string_view bytes);
  // The latest record read; nullopt before the first.
  const std::optional<StatusRecord>& latest() const { return latest_; }

 private:
  std::string line_;
  bool tooLong_ = false;
  std::optional<StatusRecord> latest_;
};

// Writes records to a progress pipe at most once per `interval` seconds
// (docs/launcher.md: at most 10 a second), without blocking: a record that
// finds the pipe full or closed is dropped. One write() per record, so that
// it is never split (a pipe writes up to PIPE_BUF bytes whole). Not
// thread-safe.
class StatusReporter {
 public:
  // `now` in seconds (any origin); `fd` < 0: reports nothing.
  StatusReporter(int fd, std::function<double()> now, double interval = 0.1);
  // Writes `record` when `interval` passed since the last one written, or
  // at once with `force` (an epoch's last step).
  void report(const StatusRecord& record, bool force = false);
  // Whether a report() now would write: lets callers skip building a record.
  bool due() const;

 private:
  int fd_;
  std::function<double()> now_;
  double interval_;
  std::optional<double> last_;
};

// report() on the descriptor this process's DISTRUN_PROGRESS_FD names
// (read once); nothing when it names none. Thread-safe.
void reportStatus(const StatusRecord& record, bool force = false);

}  // namespace distrun
