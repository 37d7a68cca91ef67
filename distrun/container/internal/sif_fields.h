#pragma once

// The SIF's packed little-endian fields, shared by its reader (sif.cc) and
// writer (sif_writer.cc): field widths from sif.go and descriptor.go, the
// architecture codes from arch.go, and a field-by-field encoder and decoder
// (Go's encoding/binary lays a struct out packed, in field order).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "distrun/common/enforce.h"

namespace distrun::container::detail {

inline constexpr size_t kLaunchLen = 32;
inline constexpr size_t kMagicLen = 10;
inline constexpr size_t kVersionLen = 3;
inline constexpr size_t kArchLen = 3;
inline constexpr size_t kIdLen = 16;
inline constexpr size_t kNameLen = 128;
inline constexpr size_t kExtraLen = 384;
inline constexpr size_t kMagicAt = kLaunchLen;
inline constexpr std::string_view kMagic = "SIF_MAGIC";
inline constexpr std::string_view kVersion = "01";
inline constexpr std::string_view kLaunchScript = "#!/usr/bin/env run-singularity\n";

// Go's GOARCH names and the header's codes for them (arch.go).
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kArches = {{
    {"386", "01"},
    {"amd64", "02"},
    {"arm", "03"},
    {"arm64", "04"},
    {"ppc64", "05"},
    {"ppc64le", "06"},
    {"mips", "07"},
    {"mipsle", "08"},
    {"mips64", "09"},
    {"mips64le", "10"},
    {"s390x", "11"},
    {"riscv64", "12"},
}};

inline std::string archName(std::string_view code) {
  for (const auto& [name, c] : kArches) {
    if (c == code) return std::string(name);
  }
  return "unknown";
}

// Packed little-endian fields appended in order, as binary.Write lays out a
// Go struct.
class FieldWriter {
 public:
  void u8(uint8_t v) { put(v, 1); }
  void u32(uint32_t v) { put(v, 4); }
  void i32(int32_t v) { put(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { put(static_cast<uint64_t>(v), 8); }
  // `text` then NULs up to `width` bytes.
  void text(std::string_view text, size_t width) {
    DISTRUN_ENFORCE_LE(text.size(), width);
    bytes_.append(text);
    bytes_.append(width - text.size(), '\0');
  }
  void zerosTo(int64_t size) { bytes_.resize(static_cast<size_t>(size), '\0'); }
  std::string& bytes() { return bytes_; }

 private:
  void put(uint64_t v, size_t width) {
    for (size_t i = 0; i < width; ++i) bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string bytes_;
};

// Reads packed little-endian fields in order; the caller hands it enough bytes.
class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes) : bytes_(bytes) {}
  uint8_t u8() { return static_cast<uint8_t>(get(1)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  int64_t i64() { return static_cast<int64_t>(get(8)); }
  std::string_view raw(size_t width) {
    DISTRUN_ENFORCE_LE(at_ + width, bytes_.size());
    std::string_view field = bytes_.substr(at_, width);
    at_ += width;
    return field;
  }
  // A NUL-padded text field, without its padding.
  std::string text(size_t width) {
    std::string_view field = raw(width);
    return std::string(field.substr(0, std::min(field.find('\0'), field.size())));
  }

 private:
  uint64_t get(size_t width) {
    std::string_view field = raw(width);
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) {
      v |= static_cast<uint64_t>(static_cast<unsigned char>(field[i])) << (8 * i);
    }
    return v;
  }
  std::string_view bytes_;
  size_t at_ = 0;
};

}  // namespace distrun::container::detail
