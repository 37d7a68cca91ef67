#include "distrun/comm/gpu/loaded_library.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::comm::gpu {

LoadedLibrary LoadedLibrary::open(const std::vector<std::string>& candidates,
                                  const std::string& what, const std::string& hint) {
  std::string firstReason;
  for (const std::string& candidate : candidates) {
    if (void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      return LoadedLibrary(handle, candidate);
    }
    if (firstReason.empty()) firstReason = ::dlerror();
  }
  throw ConfigError(fmt::format("{} could not be loaded (tried {}: {}); {}", what,
                                join(candidates, ", "), firstReason, hint));
}

void* LoadedLibrary::symbol(const char* symbol) const {
  ::dlerror();
  void* address = ::dlsym(handle_, symbol);
  if (address == nullptr) {
    throw ConfigError(
        fmt::format("{} has no {} (an older or a different library?)", name_, symbol));
  }
  return address;
}

}  // namespace distrun::comm::gpu
