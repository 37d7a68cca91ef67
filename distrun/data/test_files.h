#pragma once
// Helpers for the data tests: a temporary folder, files written from bytes,
// gzip, and the message and exit code of a failing call.

#include <stdlib.h>

#define ZLIB_CONST
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/temp_dir_testing.h"

namespace distrun::data::testing {

using ::distrun::testing::TempDir;

inline void writeBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// One gzip member holding `bytes`, as gzip(1) writes it.
inline std::vector<uint8_t> gzip(const std::vector<uint8_t>& bytes) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::vector<uint8_t> out(deflateBound(&s, static_cast<uLong>(bytes.size())));
  s.next_in = bytes.data();
  s.avail_in = static_cast<uInt>(bytes.size());
  s.next_out = out.data();
  s.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

// What a call that should fail threw: its message and exit code, or
// "no error" and kSuccess.
struct Failure {
  std::string message;
  ExitCode code = ExitCode::kSuccess;
};

inline Failure failureOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return {e.what(), exitCodeFor(e)};
  }
  return {"no error", ExitCode::kSuccess};
}

}  // namespace distrun::data::testing
