#include "distrun/plot/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

namespace distrun::plot {

namespace {

Error noInput(const std::string& what, const std::string& problem, const std::string& expected) {
  return Error(ExitCode::kNoInput, fmt::format("{}: {}: give {}", what, problem, expected));
}

}  // namespace

std::string readInputFile(const std::string& path, const std::string& what,
                          const std::string& expected) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw noInput(what, std::string("cannot open: ") + std::strerror(errno), expected);
  struct stat info {};
  if (::fstat(fd.get(), &info) == 0 && S_ISDIR(info.st_mode)) {
    throw noInput(what, "it is a folder", expected);
  }
  std::string text;
  std::array<char, 65536> buffer;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n == 0) return text;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError(fmt::format("{}: cannot read: {}", what, std::strerror(errno)));
    text.append(buffer.data(), static_cast<size_t>(n));
  }
}

std::string jsonReason(const std::string& message) {
  if (message.rfind("[json.exception.", 0) != 0) return message;
  const size_t end = message.find("] ");
  return end == std::string::npos ? message : message.substr(end + 2);
}

}  // namespace distrun::plot
