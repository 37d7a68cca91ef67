#include "distrun/common/error.h"

#include <cstring>

#include <fmt/format.h>

namespace distrun {

SystemError::SystemError(const std::string& call, const std::string& what, int err)
    : Error(ExitCode::kSystem, fmt::format("{}({}) failed: {}", call, what, std::strerror(err))),
      errno_(err) {}

ExitCode exitCodeFor(const std::exception& e) {
  if (const auto* error = dynamic_cast<const Error*>(&e)) {
    return error->exitCode();
  }
  return ExitCode::kInternal;
}

}  // namespace distrun
