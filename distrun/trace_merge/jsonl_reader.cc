#include "distrun/trace_merge/jsonl_reader.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::trace_merge {

namespace {

constexpr size_t kBufferBytes = 1 << 20;

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

JsonlReader::JsonlReader(std::string path)
    : path_(std::move(path)), buffer_(new char[kBufferBytes]) {
  in_.rdbuf()->pubsetbuf(buffer_.get(), kBufferBytes);
  errno = 0;
  in_.open(path_, std::ios::binary);
  if (!in_) {
    const int err = errno;
    throw IoError(
        fmt::format("cannot open {}: {}", path_, err != 0 ? std::strerror(err) : "unknown error"));
  }
}

JsonlReader::~JsonlReader() = default;

std::string JsonlReader::where() const { return fmt::format("{}:{}", path_, lineNumber_); }

bool JsonlReader::readLine() {
  errno = 0;
  if (!std::getline(in_, line_)) {
    if (in_.bad()) {
      throw IoError(fmt::format("cannot read {} after line {}: {}", path_, lineNumber_,
                                errno != 0 ? std::strerror(errno) : "read error"));
    }
    return false;
  }
  ++lineNumber_;
  return true;
}

bool JsonlReader::atEnd() { return in_.peek() == std::char_traits<char>::eof(); }

bool JsonlReader::next(nlohmann::json& object) {
  while (readLine()) {
    if (blank(line_)) continue;
    try {
      object = nlohmann::json::parse(line_);
    } catch (const nlohmann::json::parse_error& e) {
      if (atEnd()) {
        droppedLastLine_ = true;
        return false;
      }
      throw DataError(fmt::format(
          "{}: not whole JSON (column {}): expected one JSON object per line", where(), e.byte));
    } catch (const nlohmann::json::out_of_range&) {
      throw DataError(
          fmt::format("{}: a number beyond a double's range: expected microseconds, "
                      "counts and ids of a trace",
                      where()));
    }
    if (!object.is_object()) {
      throw DataError(fmt::format("{}: a JSON {} where a JSON object was expected", where(),
                                  object.type_name()));
    }
    return true;
  }
  return false;
}

}  // namespace distrun::trace_merge
