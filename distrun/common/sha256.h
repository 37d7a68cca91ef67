#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace distrun {

// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and dependency-free:
// the job token is a keyed hash of the user's secret and the job's ids
// (docs/security.md). Pure functions; thread-safe.
using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::string_view data);
Sha256Digest hmacSha256(std::string_view key, std::string_view message);

// Lower-case hexadecimal of `bytes`.
std::string toHex(const Sha256Digest& bytes);

}  // namespace distrun
