#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace distrun::data {

// One array read from an IDX file (the format of the MNIST files): its
// dimensions, outermost first, and its elements in row-major order. Only
// the unsigned-byte element type (0x08) exists here, so `bytes` holds
// exactly the product of `dims` elements.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

// Reads an IDX file: the magic number 00 00 08 NDIMS, NDIMS big-endian
// 32-bit dimensions, then the data and nothing after it. A file that starts
// with the gzip magic (1f 8b) is decompressed first (what torchvision keeps
// as `*.gz`); sizes in messages then count decompressed bytes.
//
// `expectedDims`, when given, is the number of dimensions the caller needs;
// a file with another number fails with the magic number it should have.
//
// Throws IoError (exit 74) when the file cannot be opened or read, naming
// the path and strerror; DataError (exit 65) when its content is not such
// an IDX array: wrong magic number or element type, truncated header or
// data, bytes after the data, a corrupt gzip stream. Every message starts
// with the path. Thread-safe.
IdxArray readIdxFile(const std::string& path, std::optional<int> expectedDims = std::nullopt);

// Encodes `array` as an uncompressed IDX file image (the inverse of
// readIdxFile); for tests and tools that write datasets.
std::vector<uint8_t> encodeIdx(const IdxArray& array);

}  // namespace distrun::data
