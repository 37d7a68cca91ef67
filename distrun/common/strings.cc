#include "distrun/common/strings.h"

#include <algorithm>

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

size_t editDistance(std::string_view a, std::string_view b) {
  // Rows i-2, i-1 and i of the optimal string alignment table.
  std::vector<size_t> before(b.size() + 1), above(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    before.swap(above);
    above.swap(row);
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({above[j] + 1, row[j - 1] + 1, above[j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        row[j] = std::min(row[j], before[j - 2] + 1);
      }
    }
  }
  return row[b.size()];
}

std::optional<std::string> closestName(std::string_view name,
                                       const std::vector<std::string>& known) {
  std::optional<std::string> best;
  size_t bestDistance = 3;
  for (const std::string& candidate : known) {
    const size_t d = editDistance(name, candidate);
    if (d >= bestDistance || 3 * d > name.size()) continue;
    best = candidate;
    bestDistance = d;
  }
  return best;
}

}  // namespace distrun
