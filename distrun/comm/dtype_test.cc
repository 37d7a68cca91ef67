#include "distrun/comm/dtype.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "distrun/comm/reduce.h"
#include "distrun/common/error.h"

namespace distrun::comm {
namespace {

TEST(DataTypeTest, NamesRoundTripAndAliasesParse) {
  for (DataType t : kAllDataTypes) EXPECT_EQ(parseDataType(nameOf(t), "-d"), t);
  for (ReduceOp op : kAllReduceOps) EXPECT_EQ(parseReduceOp(nameOf(op), "-o"), op);
  EXPECT_EQ(parseDataType("bf16", "-d"), DataType::kBFloat16);
  EXPECT_EQ(parseDataType("f16", "-d"), DataType::kFloat16);
  EXPECT_EQ(sizeOf(DataType::kBFloat16), 2u);
  EXPECT_EQ(sizeOf(DataType::kInt64), 8u);
}

TEST(DataTypeTest, UnknownNamesNameTheFlag) {
  try {
    parseDataType("float8", "-d");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "-d: unknown data type 'float8' (expected float, double, half, "
                 "bfloat16, int32 or int64)");
  }
  EXPECT_THROW(parseReduceOp("mulsum", "-o"), UsageError);
}

TEST(HalfTest, ExactValuesAndSpecials) {
  EXPECT_EQ(toHalf(1.0f).bits, 0x3c00);
  EXPECT_EQ(toHalf(-2.0f).bits, 0xc000);
  EXPECT_EQ(toHalf(65504.0f).bits, 0x7bff);
  EXPECT_EQ(toHalf(65520.0f).bits, 0x7c00);  // rounds to infinity
  EXPECT_EQ(toHalf(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_TRUE(std::isnan(toFloat(toHalf(std::nanf("")))));
  EXPECT_EQ(toHalf(5.960464477539063e-08f).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(toFloat(Half{0x0001}), 5.960464477539063e-08f);
  EXPECT_EQ(toHalf(0.0f).bits, 0x0000);
  EXPECT_EQ(toHalf(-0.0f).bits, 0x8000);
}

TEST(HalfTest, RoundsToNearestEven) {
  // 2049 lies halfway between 2048 and 2050: even mantissa wins (2048).
  EXPECT_EQ(toFloat(toHalf(2049.0f)), 2048.0f);
  EXPECT_EQ(toFloat(toHalf(2051.0f)), 2052.0f);
  EXPECT_EQ(toFloat(toHalf(2050.5f)), 2050.0f);
}

TEST(HalfTest, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    Half h{static_cast<uint16_t>(bits)};
    float f = toFloat(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(toHalf(f).bits, h.bits) << bits;
  }
}

TEST(BFloat16Test, RoundTripAndRounding) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    BFloat16 b{static_cast<uint16_t>(bits)};
    float f = toFloat(b);
    if (std::isnan(f)) continue;
    ASSERT_EQ(toBFloat16(f).bits, b.bits) << bits;
  }
  EXPECT_EQ(toFloat(toBFloat16(257.0f)), 256.0f);  // tie to even
  EXPECT_EQ(toFloat(toBFloat16(259.0f)), 260.0f);
  EXPECT_TRUE(std::isnan(toFloat(toBFloat16(std::nanf("")))));
}

TEST(ReduceTest, KernelsForEveryTypeAndOp) {
  const float a[] = {1, -2, 3};
  const float b[] = {4, 5, -6};
  float out[3];
  reduceKernel(DataType::kFloat32, ReduceOp::kSum)(out, a, b, 3);
  EXPECT_EQ(out[1], 3.0f);
  reduceKernel(DataType::kFloat32, ReduceOp::kProd)(out, a, b, 3);
  EXPECT_EQ(out[2], -18.0f);
  reduceKernel(DataType::kFloat32, ReduceOp::kMin)(out, a, b, 3);
  EXPECT_EQ(out[0], 1.0f);
  reduceKernel(DataType::kFloat32, ReduceOp::kMax)(out, a, b, 3);
  EXPECT_EQ(out[2], 3.0f);

  Half ha[] = {toHalf(1.5f)};
  Half hb[] = {toHalf(2.25f)};
  reduceKernel(DataType::kFloat16, ReduceOp::kSum)(ha, ha, hb, 1);  // aliasing
  EXPECT_EQ(toFloat(ha[0]), 3.75f);

  int64_t ia[] = {7, -7};
  divideInPlace(ia, 2, DataType::kInt64, 2);
  EXPECT_EQ(ia[0], 3);
  EXPECT_EQ(ia[1], -3);  // truncates toward zero
  BFloat16 ba[] = {toBFloat16(3.0f)};
  divideInPlace(ba, 1, DataType::kBFloat16, 2);
  EXPECT_EQ(toFloat(ba[0]), 1.5f);
}

}  // namespace
}  // namespace distrun::comm
