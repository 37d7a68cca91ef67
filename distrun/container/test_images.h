#pragma once

// Image files for the container unit tests: a stand-in SquashFS file
// system (only the superblock fields openImage reads are real), a temporary
// folder, and byte-level edits that break a good image in one chosen way.
#include <cstdint>
#include <string>

#include "distrun/common/error.h"

namespace distrun::container::test {

// `size` bytes beginning with a SquashFS 4.0 superblock whose bytes_used is
// `bytesUsed` (0: `size`), the rest a byte pattern. Not mountable.
std::string fakeSquashfs(uint64_t size = 8192, uint64_t bytesUsed = 0, uint16_t major = 4);

void writeBytes(const std::string& path, const std::string& bytes);
std::string readBytes(const std::string& path);
// Overwrites `bytes` at `offset` of the existing file `path`.
void patchBytes(const std::string& path, uint64_t offset, const std::string& bytes);
// `value` as `width` little-endian bytes.
std::string littleEndian(uint64_t value, int width);
void truncateFile(const std::string& path, uint64_t size);

// Byte offsets of the SIF file writeSif makes (create.go's defaults),
// written out here rather than taken from sif.h so the tests check the
// layout, not the code against itself.
inline constexpr uint64_t kSifTable = 4096;  // the descriptor table
inline constexpr uint64_t kSifData = 32768;  // the partition: the SquashFS file system

// A fresh folder under the system's temporary folder, removed at the end.
class TempFolder {
 public:
  TempFolder();
  ~TempFolder();
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  std::string path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The distrun::Error `call` throws, as its base; a test failure (and an
// Error with exit code 0) when it throws nothing.
template <typename Call>
Error thrownBy(Call call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  return Error(ExitCode::kSuccess, "nothing thrown");
}

}  // namespace distrun::container::test
