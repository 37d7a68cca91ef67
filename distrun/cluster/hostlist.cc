#include "distrun/cluster/hostlist.h"

#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::cluster {

namespace {

constexpr std::string_view kSeparators = ", \t\n";

// One `LO-HI` (or `N`) inside brackets. Every value prints with `width`
// digits, zero-padded, as Slurm does with the low bound's length.
struct Range {
  uint64_t lo = 0;
  uint64_t hi = 0;
  size_t width = 0;
  size_t size() const { return static_cast<size_t>(hi - lo) + 1; }
};

struct Group {
  std::vector<Range> ranges;
  size_t size() const {
    size_t n = 0;
    for (const Range& r : ranges) n += r.size();
    return n;
  }
};

// A token split at its bracket groups: texts[0] G[0] texts[1] ... G[k-1]
// texts[k]. texts has one more element than groups.
struct Token {
  std::vector<std::string> texts;
  std::vector<Group> groups;
};

// Reads one list; `pos` indexes `list` and every error names the column.
class HostlistParser {
 public:
  explicit HostlistParser(std::string_view list) : list_(list) {}

  std::vector<Token> parse() {
    std::vector<Token> tokens;
    while (pos_ < list_.size()) {
      if (isSeparator(list_[pos_])) {
        ++pos_;
        continue;
      }
      tokens.push_back(parseToken());
    }
    return tokens;
  }

 private:
  static bool isSeparator(char c) { return kSeparators.find(c) != std::string_view::npos; }
  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  [[noreturn]] void fail(size_t at, std::string_view expected) const {
    std::string found = at < list_.size() ? fmt::format("found '{}'", list_[at])
                                          : std::string("found the end of the list");
    throw ConfigError(
        fmt::format("invalid hostlist '{}': {} at column {}, {}", list_, expected, at + 1, found));
  }

  Token parseToken() {
    Token token;
    token.texts.emplace_back();
    while (pos_ < list_.size() && !isSeparator(list_[pos_])) {
      char c = list_[pos_];
      if (c == ']') fail(pos_, "expected a host name or '[' (stray ']')");
      if (c == '[') {
        token.groups.push_back(parseGroup());
        token.texts.emplace_back();
      } else {
        token.texts.back() += c;
        ++pos_;
      }
    }
    return token;
  }

  Group parseGroup() {
    size_t open = pos_++;
    Group group;
    while (true) {
      group.ranges.push_back(parseRange());
      if (pos_ >= list_.size()) {
        fail(pos_, fmt::format("expected ']' (the '[' at column {} is not "
                               "closed)",
                               open + 1));
      }
      char c = list_[pos_++];
      if (c == ']') return group;
      if (c != ',') fail(pos_ - 1, "expected ',' or ']' after a range");
    }
  }

  Range parseRange() {
    Range range;
    size_t start = pos_;
    range.lo = parseNumber();
    range.width = pos_ - start;
    range.hi = range.lo;
    if (pos_ < list_.size() && list_[pos_] == '-') {
      ++pos_;
      range.hi = parseNumber();
    }
    if (range.hi < range.lo) {
      fail(start, fmt::format("expected a range whose low end is not above "
                              "its high end ({} > {})",
                              range.lo, range.hi));
    }
    if (range.hi - range.lo >= kMaxHostsInRange) {
      fail(start, fmt::format("expected at most {} hosts in one range", kMaxHostsInRange));
    }
    return range;
  }

  uint64_t parseNumber() {
    if (pos_ >= list_.size() || !isDigit(list_[pos_])) {
      fail(pos_, "expected a number");
    }
    uint64_t value = 0;
    size_t start = pos_;
    while (pos_ < list_.size() && isDigit(list_[pos_])) {
      uint64_t digit = static_cast<uint64_t>(list_[pos_] - '0');
      if (value > (UINT64_MAX - digit) / 10) {
        fail(start, "expected a number below 2^64");
      }
      value = value * 10 + digit;
      ++pos_;
    }
    return value;
  }

  std::string_view list_;
  size_t pos_ = 0;
};

std::vector<std::string> groupValues(const Group& group) {
  std::vector<std::string> values;
  values.reserve(group.size());
  for (const Range& r : group.ranges) {
    for (uint64_t v = r.lo;; ++v) {
      values.push_back(fmt::format("{:0{}}", v, r.width));
      if (v == r.hi) break;
    }
  }
  return values;
}

size_t tokenSize(const Token& token, std::string_view list) {
  size_t total = 1;
  for (const Group& g : token.groups) {
    size_t n = g.size();
    if (n != 0 && total > kMaxHostsInList / n) {
      throw ConfigError(fmt::format("invalid hostlist '{}': expands to more than {} hosts", list,
                                    kMaxHostsInList));
    }
    total *= n;
  }
  return total;
}

// Digit order of Slurm's expansion: the last group fastest, then the first,
// the second, ..., the one before last slowest.
std::vector<size_t> fastestFirst(size_t groups) {
  std::vector<size_t> order;
  if (groups == 0) return order;
  order.push_back(groups - 1);
  for (size_t g = 0; g + 1 < groups; ++g) order.push_back(g);
  return order;
}

void expandToken(const Token& token, std::vector<std::string>& out) {
  std::vector<std::vector<std::string>> values;
  for (const Group& g : token.groups) values.push_back(groupValues(g));
  std::vector<size_t> index(values.size(), 0);
  const std::vector<size_t> order = fastestFirst(values.size());
  while (true) {
    std::string host = token.texts[0];
    for (size_t g = 0; g < values.size(); ++g) {
      host += values[g][index[g]];
      host += token.texts[g + 1];
    }
    out.push_back(std::move(host));
    size_t d = 0;
    for (; d < order.size(); ++d) {
      size_t g = order[d];
      if (++index[g] < values[g].size()) break;
      index[g] = 0;
    }
    if (d == order.size()) return;
  }
}

}  // namespace

std::vector<std::string> expandHostlist(std::string_view list) {
  std::vector<Token> tokens = HostlistParser(list).parse();
  size_t total = 0;
  for (const Token& t : tokens) {
    total += tokenSize(t, list);
    if (total > kMaxHostsInList) {
      throw ConfigError(fmt::format("invalid hostlist '{}': expands to more than {} hosts", list,
                                    kMaxHostsInList));
    }
  }
  std::vector<std::string> hosts;
  hosts.reserve(total);
  for (const Token& t : tokens) expandToken(t, hosts);
  return hosts;
}

namespace {

// A host name split into a prefix and its trailing decimal number.
struct NumberedHost {
  std::string prefix;
  std::string digits;
  uint64_t value = 0;
};

std::optional<NumberedHost> splitTrailingNumber(const std::string& host) {
  size_t end = host.size();
  size_t start = end;
  while (start > 0 && host[start - 1] >= '0' && host[start - 1] <= '9') {
    --start;
  }
  if (start == end || end - start > 19) return std::nullopt;
  NumberedHost h{host.substr(0, start), host.substr(start), 0};
  for (char c : h.digits) h.value = h.value * 10 + static_cast<uint64_t>(c - '0');
  return h;
}

// Consecutive hosts sharing a prefix, as runs of consecutive numbers.
struct Run {
  uint64_t lo, hi;
  std::string loDigits;
};

bool extendsRun(const Run& run, const NumberedHost& h) {
  return h.value == run.hi + 1 && fmt::format("{:0{}}", h.value, run.loDigits.size()) == h.digits;
}

std::string formatGroup(const std::string& prefix, const std::vector<Run>& runs) {
  if (runs.size() == 1 && runs[0].lo == runs[0].hi) {
    return prefix + runs[0].loDigits;
  }
  std::string out = prefix + "[";
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i > 0) out += ",";
    out += runs[i].loDigits;
    if (runs[i].hi != runs[i].lo) {
      out += fmt::format("-{:0{}}", runs[i].hi, runs[i].loDigits.size());
    }
  }
  return out + "]";
}

}  // namespace

std::string compressHostlist(const std::vector<std::string>& hosts) {
  std::vector<std::string> parts;
  std::optional<std::string> prefix;
  std::vector<Run> runs;
  auto flush = [&] {
    if (prefix) parts.push_back(formatGroup(*prefix, runs));
    prefix.reset();
    runs.clear();
  };
  for (const std::string& host : hosts) {
    std::optional<NumberedHost> h = splitTrailingNumber(host);
    if (!h) {
      flush();
      parts.push_back(host);
      continue;
    }
    if (prefix && *prefix != h->prefix) flush();
    if (!prefix) prefix = h->prefix;
    if (!runs.empty() && extendsRun(runs.back(), *h)) {
      runs.back().hi = h->value;
    } else {
      runs.push_back(Run{h->value, h->value, h->digits});
    }
  }
  flush();
  return join(parts, ",");
}

}  // namespace distrun::cluster
