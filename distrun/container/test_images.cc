#include "distrun/container/test_images.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace distrun::container::test {

std::string littleEndian(uint64_t value, int width) {
  std::string bytes;
  for (int i = 0; i < width; ++i) bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return bytes;
}

std::string fakeSquashfs(uint64_t size, uint64_t bytesUsed, uint16_t major) {
  std::string bytes(size, '\0');
  for (uint64_t i = 0; i < size; ++i) bytes[i] = static_cast<char>('a' + i % 26);
  bytes.replace(0, 4, "hsqs");
  bytes.replace(28, 4, littleEndian(major, 2) + littleEndian(0, 2));
  bytes.replace(40, 8, littleEndian(bytesUsed == 0 ? size : bytesUsed, 8));
  return bytes;
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out.flush()) throw IoError("test: cannot write " + path);
}

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void patchBytes(const std::string& path, uint64_t offset, const std::string& bytes) {
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  file.seekp(static_cast<std::streamoff>(offset));
  file << bytes;
  if (!file.flush()) throw IoError("test: cannot patch " + path);
}

void truncateFile(const std::string& path, uint64_t size) {
  std::filesystem::resize_file(path, size);
}

TempFolder::TempFolder() {
  std::string pattern = std::filesystem::temp_directory_path().string() + "/distrun-image-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw IoError("test: mkdtemp failed");
  path_ = pattern;
}

TempFolder::~TempFolder() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace distrun::container::test
