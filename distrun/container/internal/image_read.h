#pragma once

// Reading an image file's bytes, and the errors that name the file, shared
// by openImage (image_file.cc), readSif (sif.cc) and writeSif's check of
// its input (sif_writer.cc).
#include <cstdint>
#include <string>
#include <string_view>

#include "distrun/container/image_file.h"

namespace distrun::container::detail {

// The first bytes of a SquashFS superblock.
inline constexpr std::string_view kSquashfsMagic = "hsqs";

// ExitCode::kData: "container image PATH: WHAT".
ImageError badImage(const std::string& path, const std::string& what);

// ExitCode::kNoInput: "container image PATH: cannot STEP: strerror(err)".
ImageError unreadableImage(const std::string& path, const char* step, int err);

// Up to `length` bytes of `fd` (the file `path`) at `offset`: fewer where
// the file ends. Throws unreadableImage when the read fails.
std::string readUpTo(int fd, const std::string& path, uint64_t offset, size_t length);

// Exactly `length` bytes at `offset`, for a caller that checked the file's
// size: throws unreadableImage when a read fails and badImage when the file
// ends first (it shrank while being read).
std::string readExactly(int fd, const std::string& path, int64_t offset, int64_t length);

}  // namespace distrun::container::detail
