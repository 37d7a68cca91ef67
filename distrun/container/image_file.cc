#include "distrun/container/image_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/unique_fd.h"
#include "distrun/container/sif.h"

namespace distrun::container {

namespace {

constexpr std::array<char, 4> kSquashfsMagic = {'h', 's', 'q', 's'};
constexpr size_t kSquashfsSuperblock = 96;
constexpr size_t kBytesUsedAt = 40;  // the superblock's bytes_used, little-endian
constexpr int32_t kPartitionData = 0x4004;
constexpr int32_t kFsSquash = 1;
constexpr int32_t kPartPrimarySystem = 2;

ImageError bad(const std::string& path, const std::string& what) {
  return ImageError(ExitCode::kData, fmt::format("container image {}: {}", path, what));
}

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

std::string readAt(int fd, uint64_t offset, size_t length) {
  std::string bytes(length, '\0');
  ssize_t n = ::pread(fd, bytes.data(), length, static_cast<off_t>(offset));
  bytes.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return bytes;
}

uint64_t littleEndian64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return v;
}

bool isSquashfsAt(int fd, uint64_t offset) {
  std::string magic = readAt(fd, offset, kSquashfsMagic.size());
  return magic.size() == kSquashfsMagic.size() &&
         std::memcmp(magic.data(), kSquashfsMagic.data(), magic.size()) == 0;
}

// The SquashFS file system at `offset`: its length, checked against the file.
uint64_t squashfsLength(int fd, const std::string& path, uint64_t offset, uint64_t fileSize) {
  std::string super = readAt(fd, offset, kSquashfsSuperblock);
  if (super.size() < kSquashfsSuperblock) {
    throw bad(path, "truncated: the SquashFS superblock is cut short");
  }
  uint64_t used = littleEndian64(super, kBytesUsedAt);
  if (offset + used > fileSize) {
    throw bad(path, fmt::format("truncated: its SquashFS file system needs {} bytes, the file "
                                "holds {}: copy or build it again",
                                offset + used, fileSize));
  }
  return used;
}

const SifDescriptor* systemPartition(const SifFile& sif) {
  for (const SifDescriptor& d : sif.descriptors) {
    if (d.dataType == kPartitionData && d.partitionType == kPartPrimarySystem) return &d;
  }
  return nullptr;
}

void readSifPartition(int fd, ImageFile& image, uint64_t fileSize) {
  SifFile sif = readSif(image.path);
  const SifDescriptor* system = systemPartition(sif);
  if (system == nullptr) throw bad(image.path, "a SIF file without a system partition");
  if (system->fsType != kFsSquash) {
    throw bad(image.path, fmt::format("its system partition is not SquashFS (file system type "
                                      "{}): distrun runs SquashFS images only",
                                      system->fsType));
  }
  image.rootOffset = static_cast<uint64_t>(system->offset);
  if (!isSquashfsAt(fd, image.rootOffset)) {
    throw bad(image.path, "its system partition does not start with a SquashFS superblock");
  }
  image.rootSize = squashfsLength(fd, image.path, image.rootOffset, fileSize);
  image.arch = system->arch;
}

std::string identityOf(const struct stat& st) {
  int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return fmt::format("{}:{}:{}:{}", st.st_dev, st.st_ino, st.st_size, mtime);
}

}  // namespace

std::string formatName(ImageFormat format) {
  return format == ImageFormat::kSif ? "SIF" : "SquashFS";
}

ImageFile openImage(const std::string& path) {
  ImageFile image;
  image.path = std::filesystem::absolute(path).lexically_normal().string();
  UniqueFd fd = openForReading(image.path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw bad(image.path, "not a regular file: give a .sif or SquashFS file");
  }
  const auto fileSize = static_cast<uint64_t>(st.st_size);
  image.identity = identityOf(st);
  if (isSquashfsAt(fd.get(), 0)) {
    image.format = ImageFormat::kSquashfs;
    image.rootSize = squashfsLength(fd.get(), image.path, 0, fileSize);
    return image;
  }
  if (readAt(fd.get(), 32, 9) != "SIF_MAGIC") {
    throw bad(image.path,
              "neither a SIF file nor a SquashFS file system (no SIF_MAGIC, no "
              "hsqs superblock): build one with distrun wrap");
  }
  image.format = ImageFormat::kSif;
  readSifPartition(fd.get(), image, fileSize);
  return image;
}

}  // namespace distrun::container
