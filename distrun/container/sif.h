#pragma once

// The Singularity Image Format (SIF), as Apptainer and Singularity read it:
// a global header, a table of data object descriptors, then the objects.
// distrun writes one object, the primary system partition holding a
// SquashFS file system. Layout from the reference implementation,
// github.com/apptainer/sif (pkg/sif): see docs/containers.md.
#include <cstdint>
#include <string>
#include <vector>

namespace distrun::container {

// The SIF global header, as read.
struct SifHeader {
  std::string launchScript;  // "#!/usr/bin/env run-singularity\n"
  std::string magic;         // "SIF_MAGIC"
  std::string version;       // "01"
  std::string arch;          // "2" (amd64) in format version 01, as written there
  std::string id;            // the UUID, 32 hex digits
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
  uint32_t groupId = 0;
  uint32_t linkedId = 0;
  int64_t offset = 0;
  int64_t size = 0;
  int64_t sizeWithPadding = 0;
  int64_t createdAt = 0;
  int64_t modifiedAt = 0;
  std::string name;
  // For a partition (dataType 0x4004): file system (1 = SquashFS),
  // partition type (2 = primary system), architecture ("amd64").
  int32_t fsType = 0;
  int32_t partitionType = 0;
  std::string arch;
};

struct SifFile {
  SifHeader header;
  std::vector<SifDescriptor> descriptors;  // the used ones, in table order
};

// Reads the header and descriptor table of the SIF file `path`. Throws
// ImageError (ExitCode::kData) naming the file when it is not SIF or the
// file is shorter than the header and descriptors say; kNoInput when it
// cannot be opened.
SifFile readSif(const std::string& path);

struct SifOptions {
  std::string arch = "amd64";  // Go's GOARCH names, as Apptainer compares them
  int64_t createdAt = 0;       // seconds since the epoch; 0: now
};

// Writes `out`: a SIF file whose one object is the primary system
// partition, a copy of the SquashFS file `squashfs`. Writes `out` in place:
// the caller writes to a temporary name and renames (distrun wrap does).
// Throws IoError naming the file that could not be read or written.
void writeSif(const std::string& squashfs, const std::string& out, const SifOptions& options);

}  // namespace distrun::container
