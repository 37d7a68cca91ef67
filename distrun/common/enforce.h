#pragma once

#include <sstream>
#include <string>

#include "distrun/common/error.h"

// DISTRUN_ENFORCE(cond, parts...) and DISTRUN_ENFORCE_EQ/NE/LT/LE/GT/GE(a, b,
// parts...) guard invariants that only a bug in distrun can break. On failure
// they throw distrun::EnforceError naming file:line, the expression, both
// values for the comparisons, and the streamed message parts. Inputs a user
// can get wrong are checked with typed errors (ConfigError, ...), not these.

namespace distrun::detail {

template <typename... Parts>
std::string enforceMessage(const char* file, int line, const char* expr, const Parts&... parts) {
  std::ostringstream out;
  out << "internal error at " << file << ":" << line << ": " << expr;
  if constexpr (sizeof...(parts) > 0) {
    out << ": ";
    (out << ... << parts);
  }
  return out.str();
}

template <typename A, typename B, typename... Parts>
[[noreturn]] void enforceCompareFailed(const char* file, int line, const char* expr, const A& a,
                                       const B& b, const Parts&... parts) {
  std::ostringstream values;
  values << expr << " (" << a << " vs. " << b << ")";
  throw EnforceError(enforceMessage(file, line, values.str().c_str(), parts...));
}

}  // namespace distrun::detail

#define DISTRUN_ENFORCE(cond, ...)                                     \
  do {                                                                 \
    if (!(cond)) {                                                     \
      throw ::distrun::EnforceError(::distrun::detail::enforceMessage( \
          __FILE__, __LINE__, #cond __VA_OPT__(, ) __VA_ARGS__));      \
    }                                                                  \
  } while (false)

#define DISTRUN_ENFORCE_OP(a, op, b, ...)                                                        \
  do {                                                                                           \
    const auto& distrun_a_ = (a);                                                                \
    const auto& distrun_b_ = (b);                                                                \
    if (!(distrun_a_ op distrun_b_)) {                                                           \
      ::distrun::detail::enforceCompareFailed(__FILE__, __LINE__, #a " " #op " " #b, distrun_a_, \
                                              distrun_b_ __VA_OPT__(, ) __VA_ARGS__);            \
    }                                                                                            \
  } while (false)

#define DISTRUN_ENFORCE_EQ(a, b, ...) DISTRUN_ENFORCE_OP(a, ==, b, __VA_ARGS__)
#define DISTRUN_ENFORCE_NE(a, b, ...) DISTRUN_ENFORCE_OP(a, !=, b, __VA_ARGS__)
#define DISTRUN_ENFORCE_LT(a, b, ...) DISTRUN_ENFORCE_OP(a, <, b, __VA_ARGS__)
#define DISTRUN_ENFORCE_LE(a, b, ...) DISTRUN_ENFORCE_OP(a, <=, b, __VA_ARGS__)
#define DISTRUN_ENFORCE_GT(a, b, ...) DISTRUN_ENFORCE_OP(a, >, b, __VA_ARGS__)
#define DISTRUN_ENFORCE_GE(a, b, ...) DISTRUN_ENFORCE_OP(a, >=, b, __VA_ARGS__)
