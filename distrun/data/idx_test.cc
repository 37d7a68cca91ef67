#include "distrun/data/idx.h"

#include <numeric>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/data/test_files.h"

namespace distrun::data {
namespace {

using ::testing::ElementsAre;
using testing::failureOf;
using testing::gzip;
using testing::TempDir;
using testing::writeBytes;

// A 2×3×2 array holding 0..11.
IdxArray smallArray() {
  IdxArray array{{2, 3, 2}, std::vector<uint8_t>(12)};
  std::iota(array.bytes.begin(), array.bytes.end(), uint8_t{0});
  return array;
}

std::vector<uint8_t> concat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class IdxTest : public ::testing::Test {
 protected:
  // Writes `bytes` to a file of the temp folder and returns its path.
  std::string write(const std::vector<uint8_t>& bytes,
                    const std::string& name = "images-idx3-ubyte") {
    writeBytes(dir_.file(name), bytes);
    return dir_.file(name);
  }

  // The failure of reading `bytes` as an IDX file of 3 dimensions; its
  // message with the path replaced by "P".
  testing::Failure failureReading(const std::vector<uint8_t>& bytes, std::optional<int> dims = 3) {
    std::string path = write(bytes);
    testing::Failure f = failureOf([&] { readIdxFile(path, dims); });
    if (f.message.starts_with(path)) f.message.replace(0, path.size(), "P");
    return f;
  }

  TempDir dir_;
};

TEST_F(IdxTest, EncodesTheHeaderBigEndian) {
  IdxArray array{{258}, std::vector<uint8_t>(258, 7)};
  std::vector<uint8_t> file = encodeIdx(array);
  ASSERT_EQ(file.size(), 8u + 258u);
  EXPECT_THAT(std::vector<uint8_t>(file.begin(), file.begin() + 8),
              ElementsAre(0, 0, 8, 1, 0, 0, 1, 2));
}

TEST_F(IdxTest, ReadsAPlainFile) {
  IdxArray read = readIdxFile(write(encodeIdx(smallArray())), 3);
  EXPECT_THAT(read.dims, ElementsAre(2, 3, 2));
  EXPECT_EQ(read.bytes, smallArray().bytes);
}

TEST_F(IdxTest, ReadsAGzipFileAndAnyDimensionsWhenNoneAreExpected) {
  IdxArray read = readIdxFile(write(gzip(encodeIdx(smallArray())), "a.gz"));
  EXPECT_THAT(read.dims, ElementsAre(2, 3, 2));
  EXPECT_EQ(read.bytes, smallArray().bytes);
}

TEST_F(IdxTest, ReadsConcatenatedGzipMembersAsGzipDoes) {
  std::vector<uint8_t> file = encodeIdx(smallArray());
  std::vector<uint8_t> head(file.begin(), file.begin() + 10);
  std::vector<uint8_t> tail(file.begin() + 10, file.end());
  IdxArray read = readIdxFile(write(concat(gzip(head), gzip(tail))), 3);
  EXPECT_EQ(read.bytes, smallArray().bytes);
}

TEST_F(IdxTest, RejectsAWrongMagicNumber) {
  testing::Failure f = failureReading({0, 0, 0x0a, 3, 0, 0, 0, 1});
  EXPECT_EQ(f.message,
            "P: wrong magic number 0x00000a03: expected 0x00000803 "
            "(unsigned-byte IDX with 3 dimensions); element type 0x0a "
            "(unknown) is not supported");
  EXPECT_EQ(f.code, ExitCode::kData);
  EXPECT_EQ(failureReading({'h', 'e', 'l', 'l', 'o'}, 1).message,
            "P: wrong magic number 0x68656c6c: expected 0x00000801 "
            "(unsigned-byte IDX with 1 dimension)");
  EXPECT_EQ(failureReading({0, 0, 8, 0}, std::nullopt).message,
            "P: wrong magic number 0x00000800: expected 0x000008NN "
            "(unsigned-byte IDX with NN > 0 dimensions)");
}

TEST_F(IdxTest, RejectsOtherElementTypesAndDimensionCounts) {
  testing::Failure f = failureReading(concat({0, 0, 0x0d, 3}, {}));
  EXPECT_EQ(f.message,
            "P: wrong magic number 0x00000d03: expected 0x00000803 "
            "(unsigned-byte IDX with 3 dimensions); element type 0x0d "
            "(32-bit float) is not supported");
  EXPECT_EQ(f.code, ExitCode::kData);
  IdxArray labels{{2}, {1, 2}};
  EXPECT_EQ(failureReading(encodeIdx(labels)).message,
            "P: wrong magic number 0x00000801: expected 0x00000803 "
            "(unsigned-byte IDX with 3 dimensions)");
}

TEST_F(IdxTest, RejectsATruncatedHeader) {
  testing::Failure f = failureReading({0, 0, 8});
  EXPECT_EQ(f.message, "P: truncated: 3 bytes, shorter than an IDX magic number (4 bytes)");
  EXPECT_EQ(f.code, ExitCode::kData);
  f = failureReading({0, 0, 8, 3, 0, 0, 0, 2, 0, 0});
  EXPECT_EQ(f.message,
            "P: truncated header: 3 dimensions need 16 header bytes, file has "
            "10");
  EXPECT_EQ(f.code, ExitCode::kData);
}

TEST_F(IdxTest, RejectsTruncatedData) {
  std::vector<uint8_t> header = {0, 0, 8, 3, 0, 0, 0xea, 0x60, 0, 0, 0, 28, 0, 0, 0, 28};
  std::vector<uint8_t> file = concat(header, std::vector<uint8_t>(1234));
  testing::Failure f = failureReading(file);
  EXPECT_EQ(f.message,
            "P: truncated: header says 60000×28×28 = 47040000 bytes of data, "
            "file has 1234");
  EXPECT_EQ(f.code, ExitCode::kData);
  EXPECT_EQ(failureReading(gzip(file)).message,
            "P: truncated: header says 60000×28×28 = 47040000 bytes of data, "
            "file has 1234 (decompressed)");
  std::vector<uint8_t> huge = {0,    0,    8,    3,    0xff, 0xff, 0xff, 0xff,
                               0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(failureReading(huge).message,
            "P: truncated: header says 4294967295×4294967295×4294967295 bytes "
            "of data (more than 2^63), file has 0");
}

TEST_F(IdxTest, RejectsBytesAfterTheData) {
  std::vector<uint8_t> file = concat(encodeIdx(smallArray()), {1, 2, 3, 4, 5});
  testing::Failure f = failureReading(file);
  EXPECT_EQ(f.message,
            "P: 5 unexpected bytes after the data: header says 2×3×2 = 12 "
            "bytes of data, file has 17");
  EXPECT_EQ(f.code, ExitCode::kData);
}

TEST_F(IdxTest, RejectsACorruptGzipStream) {
  std::vector<uint8_t> good = gzip(encodeIdx(smallArray()));
  std::vector<uint8_t> badCrc = good;
  badCrc[badCrc.size() - 8] ^= 0xff;  // the CRC-32 of the trailer
  testing::Failure f = failureReading(badCrc);
  EXPECT_EQ(f.message, "P: corrupt gzip stream near byte " + std::to_string(good.size() - 4) +
                           ": incorrect data check");
  EXPECT_EQ(f.code, ExitCode::kData);
  std::vector<uint8_t> badMethod = good;
  badMethod[2] = 7;  // the compression method: 8 is deflate
  EXPECT_EQ(failureReading(badMethod).message,
            "P: corrupt gzip stream near byte 4: unknown compression method");
}

TEST_F(IdxTest, RejectsATruncatedGzipStreamAndTrailingGarbage) {
  std::vector<uint8_t> good = gzip(encodeIdx(smallArray()));
  std::vector<uint8_t> cut(good.begin(), good.end() - 3);
  testing::Failure f = failureReading(cut);
  EXPECT_EQ(f.message, "P: truncated gzip stream: the file ends after " +
                           std::to_string(cut.size()) +
                           " bytes, before the end of the compressed data");
  EXPECT_EQ(f.code, ExitCode::kData);
  f = failureReading(concat(good, {'x', 'y', 'z'}));
  EXPECT_EQ(f.message, "P: 3 unexpected bytes after the end of the gzip stream");
  EXPECT_EQ(f.code, ExitCode::kData);
}

TEST_F(IdxTest, AMissingOrUnreadableFileIsAnIoError) {
  std::string missing = dir_.file("missing-idx1-ubyte");
  testing::Failure f = failureOf([&] { readIdxFile(missing); });
  EXPECT_EQ(f.message, "cannot open '" + missing + "': No such file or directory");
  EXPECT_EQ(f.code, ExitCode::kIo);
  f = failureOf([&] { readIdxFile(dir_.path()); });
  EXPECT_EQ(f.message, "cannot read '" + dir_.path() + "': Is a directory");
  EXPECT_EQ(f.code, ExitCode::kIo);
}

}  // namespace
}  // namespace distrun::data
