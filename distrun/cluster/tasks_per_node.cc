#include "distrun/cluster/tasks_per_node.h"

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::cluster {

namespace {

// At most this many nodes in one entry's repeat count: any real job is far
// below it, and it bounds the memory a malformed value can claim.
constexpr int64_t kMaxRepeat = 1 << 20;

[[noreturn]] void malformed(std::string_view value, std::string_view variable,
                            std::string_view part) {
  throw ConfigError(fmt::format("{}='{}' is malformed at '{}': expected counts like '2(x3),1'",
                                variable, value, part));
}

int64_t parseNumber(std::string_view value, std::string_view variable, std::string_view part,
                    std::string_view number, int64_t max) {
  try {
    return parseCount(number, variable, max);
  } catch (const ConfigError&) {
    malformed(value, variable, part);
  }
}

void appendEntry(std::string_view value, std::string_view variable, std::string_view part,
                 std::vector<int>& counts) {
  size_t paren = part.find('(');
  std::string_view countText = part.substr(0, paren);
  int64_t repeat = 1;
  if (paren != std::string_view::npos) {
    if (part.size() < paren + 4 || part.substr(paren, 2) != "(x" || part.back() != ')') {
      malformed(value, variable, part);
    }
    std::string_view repeatText = part.substr(paren + 2, part.size() - paren - 3);
    repeat = parseNumber(value, variable, part, repeatText, kMaxRepeat);
    if (repeat == 0) malformed(value, variable, part);
  }
  int count = static_cast<int>(parseNumber(value, variable, part, countText, INT32_MAX));
  counts.insert(counts.end(), static_cast<size_t>(repeat), count);
}

}  // namespace

std::vector<int> parseTasksPerNode(std::string_view value, std::string_view variable) {
  std::vector<int> counts;
  for (const std::string& part : split(value, ',')) {
    appendEntry(value, variable, part, counts);
  }
  return counts;
}

}  // namespace distrun::cluster
