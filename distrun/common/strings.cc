#include "distrun/common/strings.h"

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun {

int64_t parseCount(std::string_view text, std::string_view what, int64_t max) {
  if (text.empty()) {
    throw ConfigError(fmt::format("{} is empty: expected a whole number", what));
  }
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      throw ConfigError(
          fmt::format("{}='{}' is not a whole number (unexpected '{}')", what, text, c));
    }
    value = value * 10 + (c - '0');
    if (value > max) {
      throw ConfigError(fmt::format("{}='{}' is too large (at most {})", what, text, max));
    }
  }
  return value;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) {
      parts.emplace_back(text.substr(start));
      return parts;
    }
    parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::string_view trim(std::string_view text) {
  const char* kSpace = " \t\r\n";
  size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

static bool isShellSafe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("_./,:=@%+-").find(c) != std::string_view::npos;
}

std::string shellQuote(std::string_view value) {
  bool safe = !value.empty();
  for (char c : value) safe = safe && isShellSafe(c);
  if (safe) return std::string(value);
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

bool globMatch(std::string_view pattern, std::string_view text) {
  if (pattern.empty()) return text.empty();
  if (pattern[0] == '*') {
    for (size_t skip = 0; skip <= text.size(); ++skip) {
      if (globMatch(pattern.substr(1), text.substr(skip))) return true;
    }
    return false;
  }
  if (text.empty()) return false;
  if (pattern[0] != '?' && pattern[0] != text[0]) return false;
  return globMatch(pattern.substr(1), text.substr(1));
}

}  // namespace distrun
