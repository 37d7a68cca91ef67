#pragma once

// A container image file, opened and checked before anything starts: a SIF
// file (the Singularity Image Format that Apptainer and Singularity run)
// whose system partition is a SquashFS file system, or a bare SquashFS file
// system. See docs/containers.md.
#include <cstdint>
#include <string>

#include "distrun/common/error.h"

namespace distrun::container {

enum class ImageFormat { kSif, kSquashfs };

// "SIF" or "SquashFS", for messages.
std::string formatName(ImageFormat format);

// Where an image's root file system lies in its file. A plain value.
struct ImageFile {
  std::string path;  // absolute
  ImageFormat format = ImageFormat::kSquashfs;
  uint64_t rootOffset = 0;  // byte offset of the SquashFS file system in the file
  uint64_t rootSize = 0;    // its length (the SquashFS superblock's bytes_used)
  std::string arch;         // SIF: the system partition's architecture ("amd64"); else ""
  // "DEV:INODE:SIZE:MTIME_NS": equal for the same unchanged file, so a node
  // mounts an image once and never serves a replaced file from an old mount.
  std::string identity;
};

// A container image that is missing, unreadable, truncated, or neither SIF
// nor SquashFS. what() is one line naming the file.
class ImageError : public Error {
 public:
  ImageError(ExitCode code, const std::string& message) : Error(code, message) {}
};

// Opens `path` and checks that it is a whole image: a SIF file with a
// SquashFS primary system partition, or a bare SquashFS file system, in
// both cases SquashFS 4.0 whose superblock's bytes_used fits in the file
// (and the partition). Reads headers only. Throws ImageError with
// ExitCode::kNoInput when the file does not exist or cannot be read, and
// ExitCode::kData when it is not a regular file, empty, neither format,
// shorter than its headers say (truncated), or a SIF without a SquashFS
// system partition; each with its own message (docs/errors.md lists them).
ImageFile openImage(const std::string& path);

}  // namespace distrun::container
