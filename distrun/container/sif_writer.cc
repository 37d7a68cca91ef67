// writeSif: a new SIF file laid out as the reference implementation's
// CreateContainer lays one out (create.go), with one object.
#include "distrun/container/sif.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string_view>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"
#include "distrun/container/internal/image_read.h"
#include "distrun/container/internal/sif_fields.h"

namespace distrun::container {

namespace {

using namespace sif_layout;  // NOLINT(google-build-using-namespace): the format's numbers
using namespace detail;      // NOLINT(google-build-using-namespace): its fields

constexpr size_t kCopyChunk = size_t{4} << 20;
// create.go: the table, then the data section, whose first object (a
// partition) starts at the next multiple of the alignment.
constexpr int64_t kTableEnd = kDescriptorsOffset + kDescriptorCapacity * kDescriptorSize;
constexpr int64_t kDataStart =
    (kTableEnd + kPartitionAlignment - 1) / kPartitionAlignment * kPartitionAlignment;

std::string archCode(const std::string& goArch) {
  std::string names;
  for (const auto& [name, code] : kArches) {
    if (name == goArch) return std::string(code);
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw UsageError(
      fmt::format("SIF architecture '{}': expected one of Go's GOARCH names {}", goArch, names));
}

IoError ioFailed(const std::string& what, const std::string& path, const char* step, int err) {
  return IoError(fmt::format("{} {}: cannot {}: {}", what, path, step, std::strerror(err)));
}

// 16 random bytes from /dev/urandom, stamped as an RFC 4122 version 4 UUID.
std::string randomUuid() {
  const std::string source = "/dev/urandom";
  UniqueFd fd(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw ioFailed("random source", source, "open", errno);
  std::string id(kIdLen, '\0');
  ssize_t n = ::read(fd.get(), id.data(), id.size());
  if (n != static_cast<ssize_t>(id.size())) {
    throw ioFailed("random source", source, "read 16 bytes", n < 0 ? errno : EIO);
  }
  id[6] = static_cast<char>((id[6] & 0x0f) | 0x40);  // version 4
  id[8] = static_cast<char>((id[8] & 0x3f) | 0x80);  // variant RFC 4122
  return id;
}

struct Layout {
  std::string archCode;
  std::string id;  // 16 raw bytes
  int64_t time = 0;
  int64_t dataSize = 0;  // the SquashFS bytes
};

void writeHeader(FieldWriter& w, const Layout& l) {
  int64_t padded = kDataStart - kTableEnd + l.dataSize;  // the data section
  w.text(kLaunchScript, kLaunchLen);
  w.text(kMagic, kMagicLen);
  w.text(kVersion, kVersionLen);
  w.text(l.archCode, kArchLen);
  w.text(l.id, kIdLen);
  for (int64_t field :
       {l.time, l.time, kDescriptorCapacity - 1, kDescriptorCapacity, kDescriptorsOffset,
        kDescriptorCapacity * kDescriptorSize, kTableEnd, padded}) {
    w.i64(field);
  }
}

void writePartition(FieldWriter& w, const Layout& l) {
  w.i32(kDataPartition);
  w.u8(1);   // used
  w.u32(1);  // the first object's ID
  w.u32(kDefaultGroup | kGroupMask);
  w.u32(0);  // linked to nothing
  for (int64_t field : {kDataStart, l.dataSize, kDataStart - kTableEnd + l.dataSize, l.time, l.time,
                        int64_t{0}, int64_t{0}}) {
    w.i64(field);  // offset, size, with padding, created, modified, UID, GID
  }
  w.text("", kNameLen);
  FieldWriter extra;
  extra.i32(kFsSquash);
  extra.i32(kPartPrimarySystem);
  extra.text(l.archCode, kArchLen);
  extra.zerosTo(kExtraLen);
  w.bytes() += extra.bytes();
}

// Everything before the data: header, padding, the table (one used
// descriptor, 47 zeroed ones), padding.
std::string layoutPrefix(const Layout& l) {
  FieldWriter w;
  writeHeader(w, l);
  w.zerosTo(kDescriptorsOffset);
  writePartition(w, l);
  w.zerosTo(kDataStart);
  return std::move(w.bytes());
}

void writeAllAt(int fd, const std::string& path, std::string_view bytes, int64_t offset) {
  while (!bytes.empty()) {
    ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ioFailed("writing SIF file", path, "write", errno);
    bytes.remove_prefix(static_cast<size_t>(n));
    offset += n;
  }
}

UniqueFd openSquashfs(const std::string& squashfs, const std::string& out) {
  UniqueFd in(::open(squashfs.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) throw ioFailed("SquashFS file", squashfs, "open", errno);
  char magic[4] = {};
  ssize_t n = ::pread(in.get(), magic, sizeof magic, 0);
  if (n < 0) throw ioFailed("SquashFS file", squashfs, "read", errno);
  if (std::string_view(magic, static_cast<size_t>(n)) != kSquashfsMagic) {
    throw DataError(
        fmt::format("writing SIF file {}: {} is not a SquashFS file system (no hsqs "
                    "superblock): make it with mksquashfs",
                    out, squashfs));
  }
  return in;
}

// Copies all of `in` to `out` from byte `at` on; returns the bytes copied.
int64_t copyData(int in, const std::string& squashfs, int out, const std::string& path,
                 int64_t at) {
  std::string chunk(kCopyChunk, '\0');
  int64_t copied = 0;
  for (;;) {
    ssize_t n = ::read(in, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ioFailed("SquashFS file", squashfs, "read", errno);
    if (n == 0) return copied;
    writeAllAt(out, path, std::string_view(chunk.data(), static_cast<size_t>(n)), at + copied);
    copied += n;
  }
}

}  // namespace

void writeSif(const std::string& squashfs, const std::string& out, const SifOptions& options) {
  Layout layout;
  layout.archCode = archCode(options.arch);
  UniqueFd in = openSquashfs(squashfs, out);
  layout.id = randomUuid();
  layout.time = options.createdAt != 0 ? options.createdAt : static_cast<int64_t>(::time(nullptr));
  UniqueFd fd(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755));
  if (!fd) throw ioFailed("writing SIF file", out, "create it", errno);
  layout.dataSize = copyData(in.get(), squashfs, fd.get(), out, kDataStart);
  writeAllAt(fd.get(), out, layoutPrefix(layout), 0);
  if (::fsync(fd.get()) != 0) throw ioFailed("writing SIF file", out, "fsync", errno);
}

}  // namespace distrun::container
