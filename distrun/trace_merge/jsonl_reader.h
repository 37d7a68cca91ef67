#pragma once

// Reads a JSON Lines trace file one line at a time, so that a file of any
// size costs one line of memory.
#include <cstddef>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace distrun::trace_merge {

// The lines of one file, each a JSON object. Not thread-safe.
//
// A file written by a process that crashed or was killed mid-write may end
// in a line that is not whole: the last line, when it is not JSON, is
// dropped (droppedLastLine() says so). Any other line that is not a JSON
// object is a DataError (exit 65) naming "PATH:LINE". Blank lines are
// skipped. Opening or reading the file fails with IoError (exit 74).
class JsonlReader {
 public:
  // `path` is also how messages name the file.
  explicit JsonlReader(std::string path);
  ~JsonlReader();
  JsonlReader(const JsonlReader&) = delete;
  JsonlReader& operator=(const JsonlReader&) = delete;

  // Parses the next line into `object`; false at the end of the file.
  bool next(nlohmann::json& object);
  // The number of the line `next` parsed last, from 1.
  size_t lineNumber() const { return lineNumber_; }
  // "PATH:LINE" of that line, for messages.
  std::string where() const;
  bool droppedLastLine() const { return droppedLastLine_; }
  const std::string& path() const { return path_; }

 private:
  bool readLine();
  bool atEnd();

  std::string path_;
  std::unique_ptr<char[]> buffer_;
  std::ifstream in_;
  std::string line_;
  size_t lineNumber_ = 0;
  bool droppedLastLine_ = false;
};

}  // namespace distrun::trace_merge
