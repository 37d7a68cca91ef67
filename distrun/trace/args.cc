#include "distrun/trace/args.h"

#include <fmt/format.h>

namespace distrun::trace {

std::string jsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

void Args::addKey(std::string_view key) {
  if (!body_.empty()) body_ += ',';
  body_ += '"';
  body_ += key;
  body_ += "\":";
}

Args& Args::addRaw(std::string_view key, std::string_view json) {
  addKey(key);
  body_ += json;
  return *this;
}

Args& Args::addInteger(std::string_view key, int64_t value) {
  addKey(key);
  fmt::format_to(std::back_inserter(body_), "{}", value);
  return *this;
}

Args& Args::addUnsigned(std::string_view key, uint64_t value) {
  addKey(key);
  fmt::format_to(std::back_inserter(body_), "{}", value);
  return *this;
}

// JSON has no NaN or infinity: they are written as null.
Args& Args::add(std::string_view key, double value) {
  addKey(key);
  if (value != value || value - value != 0) {
    body_ += "null";
  } else {
    fmt::format_to(std::back_inserter(body_), "{}", value);
  }
  return *this;
}

Args& Args::add(std::string_view key, std::string_view value) {
  return addRaw(key, jsonString(value));
}

Args& Args::merge(const Args& other) {
  if (other.body_.empty()) return *this;
  if (!body_.empty()) body_ += ',';
  body_ += other.body_;
  return *this;
}

}  // namespace distrun::trace
