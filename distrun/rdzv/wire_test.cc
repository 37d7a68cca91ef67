#include "distrun/rdzv/wire.h"

#include <gtest/gtest.h>

namespace distrun::rdzv {
namespace {

TEST(WireTest, RoundTrip) {
  std::string bytes;
  encodeFrame(Frame{Op::kSet, {"key", std::string("v\0al", 4)}}, bytes);
  encodeFrame(Frame{Op::kOk, {}}, bytes);
  Frame f;
  size_t used = 0;
  ASSERT_EQ(decodeFrame(bytes, f, used), DecodeStatus::kFrame);
  EXPECT_EQ(f.op, Op::kSet);
  ASSERT_EQ(f.fields.size(), 2u);
  EXPECT_EQ(f.fields[1], std::string("v\0al", 4));
  std::string rest = bytes.substr(used);
  ASSERT_EQ(decodeFrame(rest, f, used), DecodeStatus::kFrame);
  EXPECT_EQ(f.op, Op::kOk);
  EXPECT_TRUE(f.fields.empty());
}

TEST(WireTest, PartialFramesNeedMore) {
  std::string bytes;
  encodeFrame(Frame{Op::kGet, {"abc"}}, bytes);
  Frame f;
  size_t used = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(decodeFrame(bytes.substr(0, n), f, used), DecodeStatus::kNeedMore) << n;
  }
}

TEST(WireTest, MalformedFramesAreRejected) {
  Frame f;
  size_t used = 0;
  // Zero length, an oversized length, an unknown opcode, a field past the end.
  EXPECT_EQ(decodeFrame(std::string("\0\0\0\0", 4), f, used), DecodeStatus::kMalformed);
  EXPECT_EQ(decodeFrame(std::string("\xff\xff\xff\x7f", 4), f, used), DecodeStatus::kMalformed);
  EXPECT_EQ(decodeFrame(std::string("\x01\0\0\0\x2a", 5), f, used), DecodeStatus::kMalformed);
  EXPECT_EQ(decodeFrame(std::string("\x06\0\0\0\x02\x09\0\0\0x", 10), f, used),
            DecodeStatus::kMalformed);
  EXPECT_EQ(decodeFrame(std::string("\x03\0\0\0\x02\x01\0", 7), f, used), DecodeStatus::kMalformed);
}

TEST(WireTest, RequestFieldCounts) {
  EXPECT_EQ(requestFieldCount(Op::kSet), 2u);
  EXPECT_EQ(requestFieldCount(Op::kGet), 1u);
  EXPECT_FALSE(requestFieldCount(Op::kValue).has_value());
}

// A hello carries the token and, optionally, a key space; every other
// request exactly its fields.
TEST(WireTest, AHelloMayNameAKeySpace) {
  EXPECT_TRUE(fieldCountFits(Op::kHello, 1));
  EXPECT_TRUE(fieldCountFits(Op::kHello, 2));
  EXPECT_FALSE(fieldCountFits(Op::kHello, 0));
  EXPECT_FALSE(fieldCountFits(Op::kHello, 3));
  EXPECT_TRUE(fieldCountFits(Op::kSet, 2));
  EXPECT_FALSE(fieldCountFits(Op::kSet, 1));
  EXPECT_FALSE(fieldCountFits(Op::kValue, 1));
}

TEST(WireTest, AWillCarriesCounterPrefixAndValue) {
  std::string bytes;
  encodeFrame(Frame{Op::kWill, {"r0/events", "r0/event/", "lost\nnode 2"}}, bytes);
  Frame f;
  size_t used = 0;
  ASSERT_EQ(decodeFrame(bytes, f, used), DecodeStatus::kFrame);
  EXPECT_EQ(f.op, Op::kWill);
  EXPECT_EQ(f.fields.size(), requestFieldCount(Op::kWill));
  EXPECT_EQ(requestFieldCount(Op::kWill), 3u);
}

}  // namespace
}  // namespace distrun::rdzv
