#include "distrun/comm/float16_arrays.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "distrun/comm/reduce.h"

namespace distrun::comm {
namespace {

// Every half: widened exactly, by F16C as in software.
TEST(Float16ArraysTest, EveryHalfWidensToTheSameFloatEitherWay) {
  std::vector<Half> all(65536);
  for (uint32_t b = 0; b < all.size(); ++b) all[b].bits = static_cast<uint16_t>(b);
  std::vector<float> software(all.size()), chosen(all.size());
  detail::widenHalfInSoftware(software.data(), all.data(), all.size());
  widen(chosen.data(), all.data(), all.size());
  for (size_t b = 0; b < all.size(); ++b) {
    if (std::isnan(software[b])) {
      EXPECT_TRUE(std::isnan(chosen[b])) << b;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(chosen[b]), std::bit_cast<uint32_t>(software[b]))
          << "half bits " << b << " (" << halfConversion() << ")";
    }
  }
}

// Floats near every half boundary (halfway cases, subnormals, overflow)
// and at random round to the same half by F16C as in software.
TEST(Float16ArraysTest, FloatsNarrowToTheSameHalfEitherWay) {
  std::vector<float> values;
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint32_t f = std::bit_cast<uint32_t>(toFloat(Half{static_cast<uint16_t>(b)}));
    for (int32_t d : {-4097, -4096, -1, 0, 1, 4095, 4096, 4097}) {
      values.push_back(std::bit_cast<float>(f + static_cast<uint32_t>(d)));
    }
  }
  std::mt19937 random(7);
  for (int i = 0; i < 200000; ++i)
    values.push_back(std::bit_cast<float>(static_cast<uint32_t>(random())));
  std::vector<Half> software(values.size()), viaF16c(values.size());
  detail::narrowHalfInSoftware(software.data(), values.data(), values.size());
  if (!detail::narrowHalfWithF16c(viaF16c.data(), values.data(), values.size())) {
    GTEST_SKIP() << "this CPU has no F16C: software only";
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      EXPECT_EQ(viaF16c[i].bits & 0x7c00u, 0x7c00u) << i;
      EXPECT_NE(viaF16c[i].bits & 0x03ffu, 0u) << i;
    } else {
      ASSERT_EQ(viaF16c[i].bits, software[i].bits)
          << "float bits " << std::hex << std::bit_cast<uint32_t>(values[i]);
    }
  }
}

// The vectorised bfloat16 loops agree with toBFloat16 and toFloat.
TEST(Float16ArraysTest, BFloat16ArraysMatchTheScalarConversions) {
  std::mt19937 random(11);
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 1.00390625f, 1.01171875f, INFINITY, -INFINITY};
  for (int i = 0; i < 200000; ++i)
    values.push_back(std::bit_cast<float>(static_cast<uint32_t>(random())));
  std::vector<BFloat16> narrowed(values.size()), portable(values.size());
  narrow(narrowed.data(), values.data(), values.size());
  detail::narrowBFloat16WithoutAvx2(portable.data(), values.data(), values.size());
  std::vector<float> widened(values.size());
  widen(widened.data(), narrowed.data(), narrowed.size());
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(narrowed[i].bits, toBFloat16(values[i]).bits) << i;
    ASSERT_EQ(portable[i].bits, narrowed[i].bits) << i;
    const float back = toFloat(narrowed[i]);
    ASSERT_TRUE(std::bit_cast<uint32_t>(widened[i]) == std::bit_cast<uint32_t>(back)) << i;
  }
}

// A reduction of more than one block (and a tail) gives, element by
// element, the scalar reduce-in-float-and-round result, also in place.
TEST(Float16ArraysTest, WidenedReductionsMatchTheScalarResult) {
  const size_t n = 2500;
  std::vector<Half> a(n), b(n), out(n);
  std::vector<BFloat16> c(n), d(n), bout(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = toHalf(static_cast<float>(i) * 0.37f - 300.0f);
    b[i] = toHalf(static_cast<float>(i % 97) * 1.5f);
    c[i] = toBFloat16(static_cast<float>(i) * 0.37f - 300.0f);
    d[i] = toBFloat16(static_cast<float>(i % 97) * 1.5f);
  }
  reduceKernel(DataType::kFloat16, ReduceOp::kSum)(out.data(), a.data(), b.data(), n);
  reduceKernel(DataType::kBFloat16, ReduceOp::kMax)(bout.data(), c.data(), d.data(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i].bits, toHalf(toFloat(a[i]) + toFloat(b[i])).bits) << i;
    ASSERT_EQ(bout[i].bits, toBFloat16(std::max(toFloat(c[i]), toFloat(d[i]))).bits) << i;
  }
  std::vector<Half> inPlace = a;
  reduceKernel(DataType::kFloat16, ReduceOp::kSum)(inPlace.data(), inPlace.data(), b.data(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(inPlace[i].bits, out[i].bits) << i;
  divideInPlace(inPlace.data(), n, DataType::kFloat16, 3);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(inPlace[i].bits, toHalf(toFloat(out[i]) / 3.0f).bits) << i;
  }
}

}  // namespace
}  // namespace distrun::comm
