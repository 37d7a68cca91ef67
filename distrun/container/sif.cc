// readSif: the header and descriptor table of a SIF file, checked.
#include "distrun/container/sif.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/unique_fd.h"
#include "distrun/container/image_file.h"
#include "distrun/container/internal/image_read.h"
#include "distrun/container/internal/sif_fields.h"

namespace distrun::container {

namespace {

using namespace sif_layout;  // NOLINT(google-build-using-namespace): the format's numbers
using namespace detail;      // NOLINT(google-build-using-namespace): its fields, reading them

// At most this many descriptors in a table we read (48 in every image
// Apptainer makes): a corrupt count must not make us allocate gigabytes.
constexpr int64_t kMaxDescriptors = 1 << 16;

std::string uuidText(std::string_view b) {
  std::string hex;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    hex += fmt::format("{:02x}", static_cast<unsigned char>(b[i]));
  }
  return hex;
}

SifHeader parseHeader(std::string_view bytes) {
  FieldReader r(bytes);
  SifHeader h;
  h.launchScript = r.text(kLaunchLen);
  h.magic = r.text(kMagicLen);
  h.version = r.text(kVersionLen);
  h.arch = archName(r.text(kArchLen));
  h.id = uuidText(r.raw(kIdLen));
  for (int64_t* field : {&h.createdAt, &h.modifiedAt, &h.descriptorsFree, &h.descriptorsTotal,
                         &h.descriptorsOffset, &h.descriptorsSize, &h.dataOffset, &h.dataSize}) {
    *field = r.i64();
  }
  return h;
}

// One descriptor; `used` says whether it describes an object.
SifDescriptor parseDescriptor(FieldReader& r, bool& used) {
  SifDescriptor d;
  d.dataType = r.i32();
  used = r.u8() != 0;
  d.id = r.u32();
  d.groupId = r.u32() & ~kGroupMask;
  d.linkedId = r.u32();
  for (int64_t* field : {&d.offset, &d.size, &d.sizeWithPadding, &d.createdAt, &d.modifiedAt}) {
    *field = r.i64();
  }
  r.i64();  // UID and GID: deprecated, always 0
  r.i64();
  d.name = r.text(kNameLen);
  FieldReader extra(r.raw(kExtraLen));
  if (d.dataType == kDataPartition) {
    d.fsType = extra.i32();
    d.partitionType = extra.i32();
    d.arch = archName(extra.text(kArchLen));
  }
  return d;
}

int64_t fileSizeOf(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw unreadableImage(path, "stat", errno);
  return static_cast<int64_t>(st.st_size);
}

SifHeader readHeader(int fd, const std::string& path, int64_t fileSize) {
  bool magic = fileSize >= static_cast<int64_t>(kMagicAt + kMagic.size()) &&
               readExactly(fd, path, kMagicAt, kMagic.size()) == kMagic;
  if (!magic) {
    throw badImage(path,
                   "not a SIF file (no SIF_MAGIC at byte 32): give a .sif file or a "
                   "SquashFS file system (distrun wrap makes both)");
  }
  if (fileSize < kHeaderSize) {
    throw badImage(path, fmt::format("truncated: the SIF header needs {} bytes, the file holds {}: "
                                     "copy or build it again",
                                     kHeaderSize, fileSize));
  }
  return parseHeader(readExactly(fd, path, 0, kHeaderSize));
}

void checkVersion(const SifHeader& h, const std::string& path) {
  if (h.version == kVersion) return;
  throw badImage(path, fmt::format("SIF format version '{}', distrun reads version {} (Apptainer's "
                                   "and Singularity's): build the image again",
                                   h.version, kVersion));
}

// The table's place in the file; throws unless the header describes one
// that fits in it.
void checkTable(const SifHeader& h, const std::string& path, int64_t fileSize) {
  bool sane = h.descriptorsTotal >= 0 && h.descriptorsTotal <= kMaxDescriptors &&
              h.descriptorsFree >= 0 && h.descriptorsFree <= h.descriptorsTotal &&
              h.descriptorsOffset >= kHeaderSize &&
              h.descriptorsSize >= h.descriptorsTotal * kDescriptorSize;
  if (!sane) {
    throw badImage(path, fmt::format("corrupt: its SIF header lists {} descriptors ({} free) in {} "
                                     "bytes at byte {} (each takes {}): build the image again",
                                     h.descriptorsTotal, h.descriptorsFree, h.descriptorsSize,
                                     h.descriptorsOffset, kDescriptorSize));
  }
  // No overflow: the offset is below 2^63 and the table below 2^26 bytes.
  uint64_t end = static_cast<uint64_t>(h.descriptorsOffset) +
                 static_cast<uint64_t>(h.descriptorsTotal * kDescriptorSize);
  if (end > static_cast<uint64_t>(fileSize)) {
    throw badImage(path,
                   fmt::format("truncated: its SIF descriptor table ends at byte {}, the file "
                               "holds {}: copy or build it again",
                               end, fileSize));
  }
}

void checkObject(const SifDescriptor& d, const std::string& path, int64_t fileSize) {
  if (d.offset < 0 || d.size < 0) {
    throw badImage(path, fmt::format("corrupt: its SIF object {} is {} bytes at byte {}: build the "
                                     "image again",
                                     d.id, d.size, d.offset));
  }
  if (d.offset > fileSize || d.size > fileSize - d.offset) {
    throw badImage(path,
                   fmt::format("truncated: its SIF object {} is {} bytes at byte {}, the file "
                               "holds {}: copy or build it again",
                               d.id, d.size, d.offset, fileSize));
  }
}

std::vector<SifDescriptor> readDescriptors(int fd, const std::string& path, const SifHeader& h,
                                           int64_t fileSize) {
  std::string table =
      readExactly(fd, path, h.descriptorsOffset, h.descriptorsTotal * kDescriptorSize);
  FieldReader r(table);
  std::vector<SifDescriptor> used;
  for (int64_t i = 0; i < h.descriptorsTotal; ++i) {
    bool isUsed = false;
    SifDescriptor d = parseDescriptor(r, isUsed);
    if (!isUsed) continue;
    checkObject(d, path, fileSize);
    used.push_back(std::move(d));
  }
  return used;
}

}  // namespace

SifFile readSif(int fd, const std::string& path) {
  int64_t fileSize = fileSizeOf(fd, path);
  SifFile sif;
  sif.header = readHeader(fd, path, fileSize);
  checkVersion(sif.header, path);
  checkTable(sif.header, path, fileSize);
  sif.descriptors = readDescriptors(fd, path, sif.header, fileSize);
  return sif;
}

SifFile readSif(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw unreadableImage(path, "open", errno);
  return readSif(fd.get(), path);
}

}  // namespace distrun::container
