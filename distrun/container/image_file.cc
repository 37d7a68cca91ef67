#include "distrun/container/image_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/unique_fd.h"
#include "distrun/container/internal/image_read.h"
#include "distrun/container/internal/sif_fields.h"
#include "distrun/container/sif.h"

namespace distrun::container {

namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): the image's bytes and fields

constexpr size_t kSquashfsSuperblock = 96;
constexpr size_t kMajorAt = 28;      // the superblock's s_major, s_minor: 4.0
constexpr size_t kBytesUsedAt = 40;  // the superblock's bytes_used, little-endian

UniqueFd openForReading(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    throw ImageError(ExitCode::kNoInput,
                     fmt::format("container image {}: cannot open: {}: give the path of a .sif "
                                 "or SquashFS file (distrun wrap makes one)",
                                 path, std::strerror(errno)));
  }
  return fd;
}

uint64_t littleEndian(const std::string& bytes, size_t at, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return v;
}

bool isSquashfsAt(int fd, const std::string& path, uint64_t offset) {
  return readUpTo(fd, path, offset, kSquashfsMagic.size()) == kSquashfsMagic;
}

// The SquashFS file system at `offset`: its length, checked against the file.
uint64_t squashfsLength(int fd, const std::string& path, uint64_t offset, uint64_t fileSize) {
  std::string super = readUpTo(fd, path, offset, kSquashfsSuperblock);
  if (super.size() < kSquashfsSuperblock) {
    throw badImage(path, fmt::format("truncated: its SquashFS superblock needs {} bytes, the file "
                                     "holds {}: copy or build it again",
                                     offset + kSquashfsSuperblock, fileSize));
  }
  uint64_t major = littleEndian(super, kMajorAt, 2);
  uint64_t minor = littleEndian(super, kMajorAt + 2, 2);
  if (major != 4 || minor != 0) {
    throw badImage(path,
                   fmt::format("SquashFS version {}.{}, expected 4.0 (what mksquashfs and the "
                               "kernel have made since 2009): build the image again",
                               major, minor));
  }
  uint64_t used = littleEndian(super, kBytesUsedAt, 8);
  if (used < kSquashfsSuperblock) {
    throw badImage(path, fmt::format("corrupt: its SquashFS superblock says the file system is {} "
                                     "bytes: build the image again",
                                     used));
  }
  if (used > fileSize - offset) {
    throw badImage(path, fmt::format("truncated: its SquashFS file system needs {} bytes, the file "
                                     "holds {}: copy or build it again",
                                     offset + used, fileSize));
  }
  return used;
}

const SifDescriptor* systemPartition(const SifFile& sif) {
  for (const SifDescriptor& d : sif.descriptors) {
    if (d.dataType == sif_layout::kDataPartition &&
        d.partitionType == sif_layout::kPartPrimarySystem) {
      return &d;
    }
  }
  return nullptr;
}

void readSifPartition(int fd, ImageFile& image, uint64_t fileSize) {
  SifFile sif = readSif(fd, image.path);
  const SifDescriptor* system = systemPartition(sif);
  if (system == nullptr) {
    throw badImage(image.path,
                   "a SIF file without a primary system partition (nothing to run): "
                   "build it with distrun wrap or apptainer build");
  }
  if (system->fsType != sif_layout::kFsSquash) {
    throw badImage(image.path, fmt::format("its system partition is not SquashFS (file system type "
                                           "{}): distrun runs SquashFS images only",
                                           system->fsType));
  }
  image.rootOffset = static_cast<uint64_t>(system->offset);
  if (!isSquashfsAt(fd, image.path, image.rootOffset)) {
    throw badImage(image.path, fmt::format("its system partition (byte {}) does not start with a "
                                           "SquashFS superblock: build the image again",
                                           image.rootOffset));
  }
  image.rootSize = squashfsLength(fd, image.path, image.rootOffset, fileSize);
  if (image.rootSize > static_cast<uint64_t>(system->size)) {
    throw badImage(image.path,
                   fmt::format("corrupt: its SquashFS file system is {} bytes, its system "
                               "partition holds {}: build the image again",
                               image.rootSize, system->size));
  }
  image.arch = system->arch;
}

std::string identityOf(const struct stat& st) {
  int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return fmt::format("{}:{}:{}:{}", st.st_dev, st.st_ino, st.st_size, mtime);
}

// The file's size, once it proved a non-empty regular file; records its identity.
uint64_t checkedSize(int fd, ImageFile& image) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw unreadableImage(image.path, "stat", errno);
  if (!S_ISREG(st.st_mode)) {
    throw badImage(image.path, "not a regular file: give a .sif or SquashFS file");
  }
  if (st.st_size == 0) {
    throw badImage(image.path,
                   "the file is empty: an interrupted copy or build? Build it again with "
                   "distrun wrap");
  }
  image.identity = identityOf(st);
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

std::string formatName(ImageFormat format) {
  return format == ImageFormat::kSif ? "SIF" : "SquashFS";
}

ImageFile openImage(const std::string& path) {
  ImageFile image;
  image.path = std::filesystem::absolute(path).lexically_normal().string();
  UniqueFd fd = openForReading(image.path);
  uint64_t fileSize = checkedSize(fd.get(), image);
  if (isSquashfsAt(fd.get(), image.path, 0)) {
    image.format = ImageFormat::kSquashfs;
    image.rootSize = squashfsLength(fd.get(), image.path, 0, fileSize);
    return image;
  }
  if (readUpTo(fd.get(), image.path, kMagicAt, kMagic.size()) != kMagic) {
    throw badImage(image.path,
                   "neither a SIF file nor a SquashFS file system (no SIF_MAGIC, no "
                   "hsqs superblock): build one with distrun wrap");
  }
  image.format = ImageFormat::kSif;
  readSifPartition(fd.get(), image, fileSize);
  return image;
}

}  // namespace distrun::container
