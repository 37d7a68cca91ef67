#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>

namespace distrun::trace {

// The `args` object of one trace event, built as JSON text in the order
// the values are added. Keys are the caller's literals (not escaped);
// string values are escaped. A plain value, not thread-safe.
class Args {
 public:
  template <std::integral V>
  Args& add(std::string_view key, V value) {
    if constexpr (std::same_as<V, bool>) {
      return addRaw(key, value ? "true" : "false");
    } else if constexpr (std::signed_integral<V>) {
      return addInteger(key, static_cast<int64_t>(value));
    } else {
      return addUnsigned(key, static_cast<uint64_t>(value));
    }
  }
  Args& add(std::string_view key, double value);
  Args& add(std::string_view key, std::string_view value);
  Args& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
  // Adds every member of `other`, after this one's.
  Args& merge(const Args& other);

  bool empty() const { return body_.empty(); }
  // The object's members without the braces: "k":1,"s":"x".
  const std::string& members() const { return body_; }

 private:
  Args& addInteger(std::string_view key, int64_t value);
  Args& addUnsigned(std::string_view key, uint64_t value);
  Args& addRaw(std::string_view key, std::string_view json);
  void addKey(std::string_view key);

  std::string body_;
};

// `text` as a JSON string, quotes included.
std::string jsonString(std::string_view text);

}  // namespace distrun::trace
