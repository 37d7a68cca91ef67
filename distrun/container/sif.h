#pragma once

// The Singularity Image Format (SIF), as Apptainer and Singularity read it:
// a global header, a table of data object descriptors, then the objects.
// distrun writes one object, the primary system partition holding a
// SquashFS file system. Layout from the reference implementation,
// github.com/sylabs/sif and github.com/apptainer/sif (pkg/sif: sif.go,
// descriptor.go, create.go, arch.go); see docs/containers.md. Every field
// is little-endian and packed, as Go's encoding/binary writes a struct.
#include <cstdint>
#include <string>
#include <vector>

namespace distrun::container {

// The layout numbers of format version 01 that distrun reads and writes.
namespace sif_layout {
constexpr int64_t kHeaderSize = 128;      // launch 32, magic 10, version 3, arch 3, id 16, 8 x 8
constexpr int64_t kDescriptorSize = 585;  // descriptor.go's rawDescriptor, packed
constexpr int64_t kDescriptorsOffset = 4096;   // create.go: where a new image's table starts
constexpr int64_t kDescriptorCapacity = 48;    // create.go: descriptors a new image has room for
constexpr int64_t kPartitionAlignment = 4096;  // descriptor_input.go: partitions start aligned
constexpr int32_t kDataPartition = 0x4004;     // DataPartition
constexpr int32_t kFsSquash = 1;               // FsSquash
constexpr int32_t kPartPrimarySystem = 2;      // PartPrimSys
constexpr uint32_t kDefaultGroup = 1;          // DefaultObjectGroup
constexpr uint32_t kGroupMask = 0xf0000000;    // set on a stored group ID
}  // namespace sif_layout

// The SIF global header, as read. Strings have their NUL padding removed.
struct SifHeader {
  std::string launchScript;  // "#!/usr/bin/env run-singularity\n"
  std::string magic;         // "SIF_MAGIC"
  std::string version;       // "01"
  // The primary partition's architecture as Go names it ("amd64"), from the
  // header's code ("02"); "unknown" for a code arch.go does not list.
  std::string arch;
  std::string id;  // the UUID, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  int64_t createdAt = 0;
  int64_t modifiedAt = 0;
  int64_t descriptorsFree = 0;
  int64_t descriptorsTotal = 0;
  int64_t descriptorsOffset = 0;
  int64_t descriptorsSize = 0;
  int64_t dataOffset = 0;
  int64_t dataSize = 0;
};

// One used data object descriptor, as read.
struct SifDescriptor {
  int32_t dataType = 0;  // 0x4004: a partition
  uint32_t id = 0;
  uint32_t groupId = 0;   // without the stored group mask, as Go's GroupID(): 1
  uint32_t linkedId = 0;  // as stored (0: none; kGroupMask set: a group)
  int64_t offset = 0;
  int64_t size = 0;
  int64_t sizeWithPadding = 0;
  int64_t createdAt = 0;
  int64_t modifiedAt = 0;
  std::string name;
  // For a partition (dataType 0x4004): file system (1 = SquashFS),
  // partition type (2 = primary system), architecture as Go names it
  // ("amd64"; "unknown" for a code arch.go does not list).
  int32_t fsType = 0;
  int32_t partitionType = 0;
  std::string arch;
};

struct SifFile {
  SifHeader header;
  std::vector<SifDescriptor> descriptors;  // the used ones, in table order
};

// Reads the header and descriptor table of the SIF file `path`. Throws
// ImageError (ExitCode::kData) naming the file when it is not SIF, has
// another format version than 01, its header contradicts itself, or the
// file is shorter than the header, the descriptor table or a used object
// says (truncated); each with its own one-line message. kNoInput when it
// cannot be opened or read.
SifFile readSif(const std::string& path);

// The same, from `fd`, an open descriptor of `path` (for messages), so a
// caller that already checked that file reads the same one.
SifFile readSif(int fd, const std::string& path);

struct SifOptions {
  std::string arch = "amd64";  // Go's GOARCH names, as Apptainer compares them
  int64_t createdAt = 0;       // seconds since the epoch; 0: now
};

// Writes `out` as Apptainer's `build` lays out a new image (create.go's
// defaults): the header with Apptainer's launch script, a fresh random
// UUID (RFC 4122 version 4), room for 48 descriptors at byte 4096 of which
// one is used, the primary system partition (SquashFS, `options.arch`, in
// the default group 1), whose data is a copy of the SquashFS file
// `squashfs` starting at the next multiple of 4096 after the table
// (byte 32768). Writes `out` in place and fsyncs it: the caller writes to a
// temporary name and renames (distrun wrap does). The file is made
// executable (0755 less the umask), as Apptainer's images are.
//
// Throws UsageError when `options.arch` is not one of arch.go's names,
// DataError when `squashfs` does not start with a SquashFS superblock, and
// IoError naming the file that could not be read or written.
void writeSif(const std::string& squashfs, const std::string& out, const SifOptions& options);

}  // namespace distrun::container
