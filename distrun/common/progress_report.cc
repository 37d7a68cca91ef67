#include "distrun/common/progress_report.h"

#include <charconv>
#include <string>

#include "distrun/common/sigpipe.h"

namespace distrun {

std::optional<int> progressFdFrom(const Environment& env) {
  std::optional<std::string> value = env.get("DISTRUN_PROGRESS_FD");
  if (!value) return std::nullopt;
  int fd = -1;
  const char* end = value->data() + value->size();
  auto [last, error] = std::from_chars(value->data(), end, fd);
  if (error != std::errc() || last != end || fd < 0) return std::nullopt;
  return fd;
}

void reportProgressTo(int fd) {
  const char step = '.';
  [[maybe_unused]] ssize_t written = writeWithoutSigpipe(fd, &step, 1);
}

void reportProgress() {
  static const std::optional<int> fd = progressFdFrom(ProcessEnvironment());
  if (fd) reportProgressTo(*fd);
}

}  // namespace distrun
