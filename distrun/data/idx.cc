#include "distrun/data/idx.h"

#include <fcntl.h>
#include <unistd.h>

#define ZLIB_CONST
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "distrun/common/enforce.h"
#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"

namespace distrun::data {

namespace {

constexpr uint8_t kUnsignedByte = 0x08;
constexpr size_t kMagicBytes = 4;
constexpr size_t kChunk = size_t{1} << 20;

// How much more room to make after `used` bytes: as much again, from 4 KiB
// up to 1 MiB at a time, so that a small file costs no 1 MiB buffer (each
// step zero-fills what it adds) and a large one few steps.
size_t nextStep(size_t used) { return std::clamp(used, size_t{4096}, kChunk); }

std::string systemMessage(const char* action, const std::string& path, int err) {
  return fmt::format("cannot {} '{}': {}", action, path, std::strerror(err));
}

std::vector<uint8_t> readWholeFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw IoError(systemMessage("open", path, errno));
  std::vector<uint8_t> content;
  while (true) {
    size_t used = content.size();
    size_t step = nextStep(used);
    content.resize(used + step);
    ssize_t got = ::read(fd.get(), content.data() + used, step);
    int err = errno;
    content.resize(used + static_cast<size_t>(std::max<ssize_t>(got, 0)));
    if (got < 0 && err == EINTR) continue;
    if (got < 0) throw IoError(systemMessage("read", path, err));
    if (got == 0) break;
  }
  return content;
}

bool hasGzipMagic(const std::vector<uint8_t>& bytes, size_t at) {
  return bytes.size() >= at + 2 && bytes[at] == 0x1f && bytes[at + 1] == 0x8b;
}

// Owns a z_stream set up for gzip decoding.
class Inflater {
 public:
  Inflater() {
    int ret = inflateInit2(&stream_, 16 + MAX_WBITS);
    DISTRUN_ENFORCE_EQ(ret, Z_OK, "inflateInit2 failed");
  }
  ~Inflater() { inflateEnd(&stream_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  z_stream& stream() { return stream_; }

 private:
  z_stream stream_{};
};

// Inflates the gzip member that starts at `in[pos]` onto `out`; returns the
// position just after it.
size_t inflateMember(const std::string& path, const std::vector<uint8_t>& in, size_t pos,
                     std::vector<uint8_t>& out) {
  Inflater inflater;
  z_stream& s = inflater.stream();
  while (true) {
    size_t offered = std::min(in.size() - pos, kChunk);
    s.next_in = in.data() + pos;
    s.avail_in = static_cast<uInt>(offered);
    size_t used = out.size();
    size_t step = nextStep(used);
    out.resize(used + step);
    s.next_out = out.data() + used;
    s.avail_out = static_cast<uInt>(step);
    int ret = inflate(&s, Z_NO_FLUSH);
    pos += offered - s.avail_in;
    out.resize(out.size() - s.avail_out);
    if (ret == Z_STREAM_END) return pos;
    if (ret == Z_DATA_ERROR) {
      throw DataError(fmt::format("{}: corrupt gzip stream near byte {}: {}", path, pos,
                                  s.msg ? s.msg : "invalid data"));
    }
    if (ret == Z_BUF_ERROR && pos == in.size()) {
      throw DataError(
          fmt::format("{}: truncated gzip stream: the file ends after {} bytes, before "
                      "the end of the compressed data",
                      path, in.size()));
    }
    DISTRUN_ENFORCE(ret == Z_OK || ret == Z_BUF_ERROR, "inflate returned ", ret, " on ", path);
  }
}

// Decompresses every gzip member of `in` (gzip -d accepts concatenated
// members too); anything else after the last member is an error.
std::vector<uint8_t> gunzip(const std::string& path, const std::vector<uint8_t>& in) {
  std::vector<uint8_t> out;
  size_t pos = 0;
  while (true) {
    pos = inflateMember(path, in, pos, out);
    if (pos == in.size()) return out;
    if (!hasGzipMagic(in, pos)) {
      throw DataError(fmt::format("{}: {} unexpected bytes after the end of the gzip stream", path,
                                  in.size() - pos));
    }
  }
}

uint32_t bigEndian32(const std::vector<uint8_t>& bytes, size_t at) {
  return uint32_t{bytes[at]} << 24 | uint32_t{bytes[at + 1]} << 16 | uint32_t{bytes[at + 2]} << 8 |
         uint32_t{bytes[at + 3]};
}

std::string describeType(uint8_t type) {
  switch (type) {
    case 0x09:
      return "signed byte";
    case 0x0b:
      return "16-bit integer";
    case 0x0c:
      return "32-bit integer";
    case 0x0d:
      return "32-bit float";
    case 0x0e:
      return "64-bit float";
    default:
      return "unknown";
  }
}

void checkMagic(const std::string& path, const std::vector<uint8_t>& content,
                std::optional<int> expectedDims) {
  if (content.size() < kMagicBytes) {
    throw DataError(
        fmt::format("{}: truncated: {} bytes, shorter than an IDX magic number (4 bytes)", path,
                    content.size()));
  }
  uint32_t magic = bigEndian32(content, 0);
  int dims = content[3];
  bool good = content[0] == 0 && content[1] == 0 && content[2] == kUnsignedByte && dims > 0 &&
              (!expectedDims || dims == *expectedDims);
  if (good) return;
  std::string expected =
      expectedDims ? fmt::format(
                         "0x{:08x} (unsigned-byte IDX with {} "
                         "dimension{})",
                         0x800 + *expectedDims, *expectedDims, *expectedDims == 1 ? "" : "s")
                   : "0x000008NN (unsigned-byte IDX with NN > 0 dimensions)";
  std::string note;
  if (content[0] == 0 && content[1] == 0 && content[2] != kUnsignedByte) {
    note = fmt::format("; element type 0x{:02x} ({}) is not supported", content[2],
                       describeType(content[2]));
  }
  throw DataError(
      fmt::format("{}: wrong magic number 0x{:08x}: expected {}{}", path, magic, expected, note));
}

std::string joinDims(const std::vector<int64_t>& dims) {
  return fmt::format("{}", fmt::join(dims, "×"));
}

// The number of data bytes `dims` announce, or -1 when it exceeds int64.
int64_t elementCount(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(count, d, &count)) return -1;
  }
  return count;
}

void checkDataSize(const std::string& path, const std::vector<int64_t>& dims, int64_t announced,
                   size_t present, bool compressed) {
  if (announced >= 0 && static_cast<uint64_t>(announced) == present) return;
  std::string says =
      announced < 0 ? fmt::format("header says {} bytes of data (more than 2^63)", joinDims(dims))
                    : fmt::format("header says {} = {} bytes of data", joinDims(dims), announced);
  std::string has = fmt::format("file has {}{}", present, compressed ? " (decompressed)" : "");
  if (announced < 0 || static_cast<uint64_t>(announced) > present) {
    throw DataError(fmt::format("{}: truncated: {}, {}", path, says, has));
  }
  throw DataError(fmt::format("{}: {} unexpected bytes after the data: {}, {}", path,
                              present - static_cast<size_t>(announced), says, has));
}

IdxArray parseIdx(const std::string& path, const std::vector<uint8_t>& content,
                  std::optional<int> expectedDims, bool compressed) {
  checkMagic(path, content, expectedDims);
  size_t ndims = content[3];
  size_t headerBytes = kMagicBytes + 4 * ndims;
  if (content.size() < headerBytes) {
    throw DataError(
        fmt::format("{}: truncated header: {} dimensions need {} header bytes, file has {}", path,
                    ndims, headerBytes, content.size()));
  }
  IdxArray array;
  for (size_t i = 0; i < ndims; ++i) {
    array.dims.push_back(bigEndian32(content, kMagicBytes + 4 * i));
  }
  checkDataSize(path, array.dims, elementCount(array.dims), content.size() - headerBytes,
                compressed);
  array.bytes.assign(content.begin() + static_cast<ptrdiff_t>(headerBytes), content.end());
  return array;
}

void appendBigEndian32(std::vector<uint8_t>& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<uint8_t>(value >> shift));
  }
}

}  // namespace

IdxArray readIdxFile(const std::string& path, std::optional<int> expectedDims) {
  std::vector<uint8_t> content = readWholeFile(path);
  bool compressed = hasGzipMagic(content, 0);
  if (compressed) content = gunzip(path, content);
  return parseIdx(path, content, expectedDims, compressed);
}

std::vector<uint8_t> encodeIdx(const IdxArray& array) {
  DISTRUN_ENFORCE(!array.dims.empty() && array.dims.size() < 256,
                  "an IDX array has 1 to 255 dimensions, not ", array.dims.size());
  DISTRUN_ENFORCE_EQ(elementCount(array.dims), static_cast<int64_t>(array.bytes.size()),
                     "dims and bytes of an IdxArray disagree");
  std::vector<uint8_t> out = {0, 0, kUnsignedByte, static_cast<uint8_t>(array.dims.size())};
  for (int64_t d : array.dims) {
    DISTRUN_ENFORCE(d >= 0 && d <= INT64_C(0xffffffff), "IDX dimensions are 32-bit, not ", d);
    appendBigEndian32(out, static_cast<uint32_t>(d));
  }
  out.insert(out.end(), array.bytes.begin(), array.bytes.end());
  return out;
}

}  // namespace distrun::data
