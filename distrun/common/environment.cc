#include "distrun/common/environment.h"

#include <cstdlib>
#include <string_view>

extern char** environ;

namespace distrun {

std::string Environment::getOr(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

std::optional<std::string> ProcessEnvironment::get(const std::string& name) const {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::map<std::string, std::string> ProcessEnvironment::all() const {
  std::map<std::string, std::string> vars;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    vars.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return vars;
}

std::optional<std::string> MapEnvironment::get(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

}  // namespace distrun
