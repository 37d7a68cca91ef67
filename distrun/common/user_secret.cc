#include "distrun/common/user_secret.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/sha256.h"
#include "distrun/common/strings.h"
#include "distrun/common/unique_fd.h"

namespace distrun {

namespace {

constexpr size_t kSecretBytes = 32;

std::string passwdHome() {
  std::string buffer(16384, '\0');
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) != 0 || !found) {
    throw ConfigError(
        "HOME is not set and this user has no home in the password database: "
        "set DISTRUN_TOKEN, or HOME or XDG_CONFIG_HOME for distrun's secret file");
  }
  return found->pw_dir;
}

std::string tooOpen(const std::string& path, const struct stat& st, const char* fix) {
  return fmt::format(
      "permissions {:04o} (owner uid {}) of '{}' are too open: distrun's job "
      "tokens need it private to uid {} ({})",
      st.st_mode & 07777, st.st_uid, path, ::geteuid(), fix);
}

// The folder holding the secret: owned by this user, writable by nobody else.
void checkFolder(const std::string& folder, const std::string& path) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    throw IoError(
        fmt::format("cannot make the folder '{}' of distrun's secret: {}: set "
                    "DISTRUN_TOKEN, or XDG_CONFIG_HOME to a folder you can write",
                    folder, std::strerror(errno)));
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    throw ConfigError(tooOpen(folder, st, "chmod 700 it") + ", the folder of " + path);
  }
}

// Makes the missing folders of `folder`, each 0700 (less by the umask, never
// more open; the umask itself is left alone: it is the whole process's).
void makeFolder(const std::filesystem::path& folder) {
  std::filesystem::path made;
  for (const std::filesystem::path& part : folder) {
    made /= part;
    ::mkdir(made.c_str(), 0700);  // fails when it exists; checkFolder reports any other failure
  }
}

// Writes a new secret beside `path` and links it into place; a secret that
// another task linked first wins (link fails with EEXIST, atomically, on
// NFS too).
void createSecret(const std::string& path) {
  const std::string aside = fmt::format("{}.{}.{}", path, ::getpid(), randomHex(4));
  UniqueFd fd(::open(aside.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) throw IoError(fmt::format("cannot create '{}': {}", aside, std::strerror(errno)));
  const std::string text = randomHex(kSecretBytes) + "\n";
  const bool written =
      ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
      ::fsync(fd.get()) == 0;
  const int err = errno;
  const bool linked = written && (::link(aside.c_str(), path.c_str()) == 0 || errno == EEXIST);
  const int linkErr = errno;
  ::unlink(aside.c_str());
  if (!written) throw IoError(fmt::format("cannot write '{}': {}", aside, std::strerror(err)));
  if (!linked) throw IoError(fmt::format("cannot create '{}': {}", path, std::strerror(linkErr)));
}

std::string readSecret(const UniqueFd& fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw IoError(fmt::format("cannot stat '{}': {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    throw ConfigError(tooOpen(path, st, "chmod 600 it, or delete it to make a new one"));
  }
  char buffer[256];
  const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
  if (n < 0) throw IoError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  std::string secret(trim(std::string_view(buffer, static_cast<size_t>(n))));
  if (secret.size() < 2 * kSecretBytes) {
    throw ConfigError(
        fmt::format("'{}' holds {} characters, expected at least {}: delete it to "
                    "make a new one",
                    path, secret.size(), 2 * kSecretBytes));
  }
  return secret;
}

}  // namespace

std::string userSecretPath(const Environment& env) {
  if (auto config = env.get("XDG_CONFIG_HOME"); config && config->starts_with("/")) {
    return *config + "/distrun/secret";
  }
  auto home = env.get("HOME");
  return (home && !home->empty() ? *home : passwdHome()) + "/.config/distrun/secret";
}

std::string loadUserSecret(const std::string& path) {
  const std::filesystem::path file(path);
  makeFolder(file.parent_path());
  checkFolder(file.parent_path().string(), path);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd && errno == ENOENT) {
    createSecret(path);
    fd.reset(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!fd) throw IoError(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  return readSecret(fd, path);
}

std::string randomHex(size_t count) {
  std::string bytes(count, '\0');
  if (::getrandom(bytes.data(), count, 0) != static_cast<ssize_t>(count)) {
    throw IoError(fmt::format("cannot read {} random bytes: {}", count, std::strerror(errno)));
  }
  std::string hex;
  for (char b : bytes) hex += fmt::format("{:02x}", static_cast<unsigned char>(b));
  return hex;
}

std::string derivedToken(const Environment& env, const std::string& what) {
  return toHex(hmacSha256(loadUserSecret(userSecretPath(env)), "distrun job token\n" + what));
}

}  // namespace distrun
