#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace distrun {

// Parses a whole string as a non-negative decimal integer. `what` names the
// input (a variable or a flag) in the ConfigError thrown for anything else:
// an empty string, a sign, trailing characters, or a value above `max`.
int64_t parseCount(std::string_view text, std::string_view what, int64_t max = INT32_MAX);

// Splits on every occurrence of `sep`; "a,,b" gives {"a", "", "b"} and ""
// gives {""}.
std::vector<std::string> split(std::string_view text, char sep);

std::string join(const std::vector<std::string>& parts, std::string_view sep);

std::string_view trim(std::string_view text);

// Shell-quotes `value` with single quotes when it holds anything but
// [A-Za-z0-9_./,:=@%+-], so `eval` reproduces it exactly.
std::string shellQuote(std::string_view value);

// 64-bit FNV-1a: a stable, well-mixed hash for ids and tokens (not a
// cryptographic one).
uint64_t fnv1a(std::string_view text);

// True when `text` matches the glob `pattern` (`*` and `?` only).
bool globMatch(std::string_view pattern, std::string_view text);

// The edits (insert, delete, replace, or swap two neighbouring letters)
// that turn `a` into `b`: "rnu" is one edit from "run".
size_t editDistance(std::string_view a, std::string_view b);

// For "did you mean": the name of `known` nearest `name`, two edits away at
// most and fewer than a third of its letters (so that --x does not suggest
// --lr); the first of equals. Empty when none is that close.
std::optional<std::string> closestName(std::string_view name,
                                       const std::vector<std::string>& known);

}  // namespace distrun
