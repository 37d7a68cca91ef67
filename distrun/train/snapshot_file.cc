#include "distrun/train/snapshot_file.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "distrun/common/atomic_file.h"
#include "distrun/common/error.h"

namespace distrun::train {

namespace {

constexpr char kMagic[] = "DRSNAP1\n";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;
constexpr size_t kHeaderSize = kMagicSize + 8 + 4;

uint32_t crc32Of(const std::string& data) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const auto* bytes = reinterpret_cast<const Bytef*>(data.data());
  size_t left = data.size();
  while (left > 0) {  // zlib takes 32-bit lengths
    const uInt chunk = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = ::crc32(crc, bytes, chunk);
    bytes += chunk;
    left -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

void putLittleEndian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t getLittleEndian(const std::string& in, size_t at, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(in[at + static_cast<size_t>(i)]);
  }
  return value;
}

[[noreturn]] void failIo(const std::string& what, const std::string& path) {
  throw IoError(fmt::format("snapshot {}: {}: {}", path, what, std::strerror(errno)));
}

// Keeps the current snapshot as PATH.prev while PATH itself stays: a hard
// link, so that a crash or a failed write after it leaves PATH as it was.
// Where the filesystem has no hard links, PATH is renamed instead
// (findLatestSnapshot reads PATH.prev until the new PATH is in place).
void keepPrevious(const std::string& path) {
  const std::string prev = path + ".prev";
  if (::access(path.c_str(), F_OK) != 0) return;
  if (::unlink(prev.c_str()) != 0 && errno != ENOENT) {
    failIo("cannot remove the older snapshot " + prev, path);
  }
  if (::link(path.c_str(), prev.c_str()) == 0) return;
  if (::rename(path.c_str(), prev.c_str()) != 0) {
    failIo("cannot keep the previous snapshot as " + prev, path);
  }
}

}  // namespace

// The envelope costs one copy of the payload: writeFileAtomically takes the
// file's bytes in one piece (encodeState's stream held as much at its end).
void writeSnapshotFile(const std::string& path, const std::string& payload) {
  std::string file(kMagic, kMagicSize);
  putLittleEndian(file, payload.size(), 8);
  putLittleEndian(file, crc32Of(payload), 4);
  file.reserve(kHeaderSize + payload.size());
  file += payload;
  keepPrevious(path);
  writeFileAtomically(path, file, "snapshot");
}

std::string readSnapshotFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) failIo("cannot open", path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string data = buffer.str();
  if (data.size() < kHeaderSize || data.compare(0, kMagicSize, kMagic, kMagicSize) != 0) {
    throw DataError(
        fmt::format("snapshot {} is not a distrun snapshot: expected it to start with "
                    "'DRSNAP1' and a {}-byte header",
                    path, kHeaderSize));
  }
  const uint64_t size = getLittleEndian(data, kMagicSize, 8);
  const uint64_t have = data.size() - kHeaderSize;
  if (have != size) {
    throw DataError(
        fmt::format("snapshot {} is {}: its header says {} bytes of data, the file has {}", path,
                    have < size ? "truncated" : "too long", size, have));
  }
  std::string payload = data.substr(kHeaderSize);
  const auto want = static_cast<uint32_t>(getLittleEndian(data, kMagicSize + 8, 4));
  const uint32_t got = crc32Of(payload);
  if (got != want) {
    throw DataError(
        fmt::format("snapshot {} is corrupt: CRC-32 of its data is {:08x}, its header says {:08x}",
                    path, got, want));
  }
  return payload;
}

std::optional<FoundSnapshot> findLatestSnapshot(const std::string& path, std::ostream& warnings) {
  std::string refused;
  for (const std::string& candidate : {path, path + ".prev"}) {
    if (::access(candidate.c_str(), F_OK) != 0) continue;
    try {
      return FoundSnapshot{candidate, readSnapshotFile(candidate)};
    } catch (const DataError& e) {
      if (!refused.empty()) {
        throw DataError(fmt::format("{}; the previous snapshot too: {}", refused, e.what()));
      }
      refused = e.what();
      warnings << "distrun-train: warning: " << refused << "; trying " << path << ".prev\n";
    }
  }
  if (!refused.empty()) {
    throw DataError(
        fmt::format("{}, and there is no previous snapshot {}.prev: delete {} to start afresh",
                    refused, path, path));
  }
  return std::nullopt;
}

namespace {

// NAME is BASE.tmp.DIGITS, the temporary writeFileAtomically makes for BASE.
bool isTemporaryOf(const std::string& name, const std::string& base) {
  const std::string prefix = base + ".tmp.";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  return name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

}  // namespace

void removeInterruptedWrites(const std::string& path, std::ostream& notes) {
  namespace fs = std::filesystem;
  const fs::path file(path);
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (!isTemporaryOf(it->path().filename().string(), file.filename().string())) continue;
    std::error_code ignored;
    if (!fs::remove(it->path(), ignored)) continue;
    notes << "distrun-train: removed " << (folder / it->path().filename()).string()
          << ", a snapshot whose write was interrupted\n";
  }
}

}  // namespace distrun::train
