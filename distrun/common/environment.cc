#include "distrun/common/environment.h"

#include <cstdlib>

namespace distrun {

std::string Environment::getOr(const std::string& name,
                               const std::string& fallback) const {
  return get(name).value_or(fallback);
}

std::optional<std::string> ProcessEnvironment::get(
    const std::string& name) const {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<std::string> MapEnvironment::get(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

}  // namespace distrun
