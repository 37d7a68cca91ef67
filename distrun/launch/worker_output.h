#pragma once

#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace distrun {
class LiveLine;
}  // namespace distrun

namespace distrun::launch {

// Which of a worker's streams go where, as torchrun's --redirects and --tee
// give them: 0 none, 1 stdout, 2 stderr, 3 both.
struct StreamRoute {
  bool stdoutToConsole = true;
  bool stderrToConsole = true;
  bool stdoutToFile = false;
  bool stderrToFile = false;
};

// Parses a --redirects/--tee value: "3" for every local rank, or a map
// "0:1,1:2". Throws UsageError naming `flag` for anything else.
std::map<int, int> parseStreamSpec(const std::string& value, const std::string& flag);

// The value of a parsed spec for `localRank` (a single number applies to all).
int streamBits(const std::map<int, int>& spec, int localRank);

// torchrun 2.x's --duplicate-stdout-filters/--duplicate-stderr-filters: the
// lines of every worker of a round that contain one of `needles` are also
// written, with their console prefix, to one file (filtered_stdout.log,
// filtered_stderr.log in the round's attempt folder). Throws IoError naming
// the file when it cannot be opened.
class FilteredCopy {
 public:
  FilteredCopy(std::vector<std::string> needles, const std::string& path);
  ~FilteredCopy();
  FilteredCopy(const FilteredCopy&) = delete;
  FilteredCopy& operator=(const FilteredCopy&) = delete;
  void offer(std::string_view prefix, std::string_view line);

 private:
  std::vector<std::string> needles_;
  std::FILE* file_;
};

// A --duplicate-*-filters value as torchrun splits it: at commas, a double
// comma standing for a comma itself ("a,,b,c": "a,b" and "c").
std::vector<std::string> parseDuplicateFilters(const std::string& value);

// One worker's output: splits what it writes into lines, prefixes each for
// the console, copies it to per-rank files, and remembers the last lines of
// stderr for the failure report. Not thread-safe; the agent's loop owns it.
class WorkerOutput {
 public:
  // `dir` is where stdout.log and stderr.log go when the route asks for
  // files (created if needed). Throws IoError when a file cannot be opened.
  WorkerOutput(std::string prefix, StreamRoute route, const std::string& dir);
  ~WorkerOutput();
  WorkerOutput(const WorkerOutput&) = delete;
  WorkerOutput& operator=(const WorkerOutput&) = delete;

  void onStdout(std::string_view bytes) { feed(out_, bytes); }
  void onStderr(std::string_view bytes) { feed(err_, bytes); }
  // Writes any unterminated last lines.
  void finish();
  // The agent's status line (status_line.h), erased before each console
  // line so that the line is written on a clean last line; null: none.
  void setStatusLine(LiveLine* line) { statusLine_ = line; }
  // The round's filtered copies of stdout and stderr (null: none).
  void setFilteredCopies(FilteredCopy* out, FilteredCopy* err) {
    out_.copy = out;
    err_.copy = err;
  }
  // The last lines the worker wrote to stderr, oldest first.
  const std::deque<std::string>& stderrTail() const { return tail_; }

  static constexpr size_t kTailLines = 20;

 private:
  struct Stream {
    std::FILE* console;
    std::FILE* file = nullptr;
    bool toConsole;
    bool isStderr;
    std::string partial;
    FilteredCopy* copy = nullptr;
  };
  void feed(Stream& s, std::string_view bytes);
  void emit(Stream& s, std::string_view line);

  std::string prefix_;
  Stream out_;
  Stream err_;
  std::deque<std::string> tail_;
  LiveLine* statusLine_ = nullptr;
};

// Expands a log prefix template: {node} {rank} {local_rank} {role} {host}.
std::string expandPrefix(const std::string& format, int node, int rank, int localRank,
                         const std::string& role, const std::string& host);

}  // namespace distrun::launch
