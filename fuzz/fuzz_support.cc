#include "fuzz/fuzz_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace distrun::fuzz {

namespace {

// The scratch folder, removed when the process exits normally.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern = (base() / "distrun-fuzz.XXXXXX");
    check(::mkdtemp(pattern.data()) != nullptr, "mkdtemp failed for the scratch folder");
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  // /dev/shm when there is one: a file rewritten for every input costs a
  // flush to disk on ext4 (auto_da_alloc), ~5 ms, in memory nothing.
  static std::filesystem::path base() {
    std::error_code ignored;
    if (std::filesystem::is_directory("/dev/shm", ignored)) return "/dev/shm";
    return std::filesystem::temp_directory_path();
  }

  std::string path_;
};

}  // namespace

void unexpected(std::string_view kind, std::string_view what) {
  std::fprintf(stderr, "fuzz finding: %.*s: %.*s\n", static_cast<int>(kind.size()), kind.data(),
               static_cast<int>(what.size()), what.data());
  std::abort();
}

void check(bool ok, std::string_view what) {
  if (!ok) unexpected("a failed check", what);
}

std::string scratchPath(std::string_view name) {
  static ScratchFolder folder;
  return folder.path() + "/" + std::string(name);
}

void writeScratch(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  check(static_cast<bool>(out.flush()), "cannot write the scratch file " + path);
}

std::string readScratch(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(static_cast<bool>(in), "cannot read the scratch file " + path);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace distrun::fuzz
