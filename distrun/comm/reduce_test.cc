#include "distrun/comm/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace distrun::comm {
namespace {

// The instruction sets this CPU runs, narrowest first.
std::vector<Instructions> runnable() {
  std::vector<Instructions> all;
  for (Instructions isa : kAllInstructions) {
    if (isa <= widestInstructions()) all.push_back(isa);
  }
  return all;
}

// Values that catch a kernel out: signed zeros, infinities, NaN, subnormals,
// large and small, in a random order.
std::vector<double> awkwardValues(size_t n, unsigned seed) {
  const double specials[] = {0.0,
                             -0.0,
                             1.0,
                             -1.5,
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             std::nan(""),
                             1e-40,
                             -3e-39,
                             65504.0,
                             1e30,
                             0.1};
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> ordinary(-100.0, 100.0);
  std::vector<double> values(n);
  for (double& v : values) {
    v = random() % 4 == 0 ? specials[random() % std::size(specials)] : ordinary(random);
  }
  return values;
}

// A buffer of n elements of `type` from `values` (integers as whole numbers
// in -1000..1000, so that no sum or product overflows).
std::vector<unsigned char> bufferOf(DataType type, const std::vector<double>& values) {
  std::vector<unsigned char> bytes(values.size() * sizeOf(type));
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    const double whole = std::isfinite(v) ? std::fmod(std::trunc(v), 1000.0) : 7.0;
    unsigned char* at = bytes.data() + i * sizeOf(type);
    switch (type) {
      case DataType::kFloat32: {
        const auto f = static_cast<float>(v);
        std::memcpy(at, &f, sizeof f);
        break;
      }
      case DataType::kFloat64:
        std::memcpy(at, &v, sizeof v);
        break;
      case DataType::kFloat16: {
        const Half h = toHalf(static_cast<float>(v));
        std::memcpy(at, &h, sizeof h);
        break;
      }
      case DataType::kBFloat16: {
        const BFloat16 h = toBFloat16(static_cast<float>(v));
        std::memcpy(at, &h, sizeof h);
        break;
      }
      case DataType::kInt32: {
        const auto i32 = static_cast<int32_t>(whole);
        std::memcpy(at, &i32, sizeof i32);
        break;
      }
      case DataType::kInt64: {
        const auto i64 = static_cast<int64_t>(whole);
        std::memcpy(at, &i64, sizeof i64);
        break;
      }
    }
  }
  return bytes;
}

// Element i of a buffer as a double (exact for every type here).
double valueAt(DataType type, const unsigned char* data, size_t i) {
  const unsigned char* at = data + i * sizeOf(type);
  switch (type) {
    case DataType::kFloat32: {
      float f;
      std::memcpy(&f, at, sizeof f);
      return f;
    }
    case DataType::kFloat64: {
      double d;
      std::memcpy(&d, at, sizeof d);
      return d;
    }
    case DataType::kFloat16: {
      Half h;
      std::memcpy(&h, at, sizeof h);
      return toFloat(h);
    }
    case DataType::kBFloat16: {
      BFloat16 h;
      std::memcpy(&h, at, sizeof h);
      return toFloat(h);
    }
    case DataType::kInt32: {
      int32_t i32;
      std::memcpy(&i32, at, sizeof i32);
      return i32;
    }
    case DataType::kInt64: {
      int64_t i64;
      std::memcpy(&i64, at, sizeof i64);
      return static_cast<double>(i64);
    }
  }
  return 0;
}

// What one element of `a OP b` must be, computed in the type's own
// arithmetic (the 16-bit types in float, rounded back).
template <class T>
T apply(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return a + b;
    case ReduceOp::kProd:
      return a * b;
    case ReduceOp::kMin:
      return b < a ? b : a;
    case ReduceOp::kMax:
      return a < b ? b : a;
  }
  return a;
}

double expected(DataType type, ReduceOp op, double a, double b) {
  switch (type) {
    case DataType::kFloat32:
      return apply(op, static_cast<float>(a), static_cast<float>(b));
    case DataType::kFloat64:
      return apply(op, a, b);
    case DataType::kFloat16:
      return toFloat(toHalf(apply(op, static_cast<float>(a), static_cast<float>(b))));
    case DataType::kBFloat16:
      return toFloat(toBFloat16(apply(op, static_cast<float>(a), static_cast<float>(b))));
    case DataType::kInt32:
      return apply(op, static_cast<int32_t>(a), static_cast<int32_t>(b));
    case DataType::kInt64:
      return static_cast<double>(apply(op, static_cast<int64_t>(a), static_cast<int64_t>(b)));
  }
  return 0;
}

// What kAvg's division must give for one element.
double quotient(DataType type, double v, int divisor) {
  const float f = static_cast<float>(v) / static_cast<float>(divisor);
  switch (type) {
    case DataType::kFloat32:
      return f;
    case DataType::kFloat64:
      return v / divisor;
    case DataType::kFloat16:
      return toFloat(toHalf(f));
    case DataType::kBFloat16:
      return toFloat(toBFloat16(f));
    case DataType::kInt32:
    case DataType::kInt64:
      return static_cast<double>(static_cast<int64_t>(v) / divisor);  // truncates
  }
  return 0;
}

bool same(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return x == y && std::signbit(x) == std::signbit(y);
}

// Lengths around every vector width, and one past many blocks.
constexpr size_t kLengths[] = {0, 1, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 1000, 4099};

std::string label(Instructions isa, DataType type, ReduceOp op, size_t n) {
  std::ostringstream text;
  text << instructionsName(isa) << ' ' << nameOf(type) << ' ' << nameOf(op) << " n=" << n;
  return text.str();
}

// Every instruction set gives each element its exact value, out of place
// and in place on either operand, from a misaligned start; and the same
// bits as the baseline (NaNs included).
TEST(ReduceKernelTest, EveryInstructionSetGivesEachElementItsValueAndTheBaselinesBits) {
  for (DataType type : kAllDataTypes) {
    for (ReduceOp op : kAllReduceOps) {
      for (size_t n : kLengths) {
        const size_t element = sizeOf(type);
        // One element in front: the kernels get a start that is not aligned.
        const auto a = bufferOf(type, awkwardValues(n + 1, 1));
        const auto b = bufferOf(type, awkwardValues(n + 1, 2));
        std::vector<unsigned char> baseline(a.size());
        reduceKernel(Instructions::kBaseline, type, op)(baseline.data() + element,
                                                        a.data() + element, b.data() + element, n);
        for (Instructions isa : runnable()) {
          SCOPED_TRACE(label(isa, type, op, n));
          const ReduceKernel reduce = reduceKernel(isa, type, op);
          std::vector<unsigned char> out(a.size());
          reduce(out.data() + element, a.data() + element, b.data() + element, n);
          auto intoA = a;
          reduce(intoA.data() + element, intoA.data() + element, b.data() + element, n);
          auto intoB = b;
          reduce(intoB.data() + element, a.data() + element, intoB.data() + element, n);
          EXPECT_EQ(out, baseline);
          EXPECT_EQ(std::memcmp(intoA.data() + element, out.data() + element, n * element), 0);
          EXPECT_EQ(std::memcmp(intoB.data() + element, out.data() + element, n * element), 0);
          for (size_t i = 1; i <= n; ++i) {
            const double want =
                expected(type, op, valueAt(type, a.data(), i), valueAt(type, b.data(), i));
            ASSERT_TRUE(same(valueAt(type, out.data(), i), want))
                << "element " << i << ": " << valueAt(type, out.data(), i) << ", expected " << want;
          }
        }
      }
    }
  }
}

TEST(ReduceKernelTest, EveryInstructionSetDividesAsTheBaseline) {
  for (DataType type : kAllDataTypes) {
    for (size_t n : kLengths) {
      const auto data = bufferOf(type, awkwardValues(n, 3));
      auto baseline = data;
      divideInPlace(Instructions::kBaseline, baseline.data(), n, type, 3);
      for (size_t i = 0; i < n; ++i) {
        const double want = quotient(type, valueAt(type, data.data(), i), 3);
        ASSERT_TRUE(same(valueAt(type, baseline.data(), i), want))
            << nameOf(type) << " element " << i << " of " << n;
      }
      for (Instructions isa : runnable()) {
        auto divided = data;
        divideInPlace(isa, divided.data(), n, type, 3);
        EXPECT_EQ(divided, baseline) << label(isa, type, ReduceOp::kAvg, n);
      }
    }
  }
}

// The CPU's own flags (the kernel's /proc/cpuinfo) against the choice.
TEST(ReduceKernelTest, TheWidestIsWhatTheCpuFlagsSay) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the avx2 and avx512 kernels are built for x86-64 only";
#else
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::string flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags = line + " ";
      break;
    }
  }
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  auto has = [&](const std::string& flag) {
    return flags.find(" " + flag + " ") != std::string::npos;
  };
  Instructions want = Instructions::kBaseline;
  if (has("avx2")) want = Instructions::kAvx2;
  if (has("avx512f") && has("avx512dq") && has("avx512bw") && has("avx512vl")) {
    want = Instructions::kAvx512;
  }
  EXPECT_EQ(instructionsName(widestInstructions()), instructionsName(want)) << flags;
#endif
}

// By default, half and bfloat16 take the widest instructions, the other
// types AVX2 at most; a choice serves every type of the whole process.
TEST(ReduceKernelTest, TheChosenInstructionsServeTheWholeProcess) {
  const Instructions wide = std::min(widestInstructions(), Instructions::kAvx2);
  for (DataType type : kAllDataTypes) {
    const bool sixteen = type == DataType::kFloat16 || type == DataType::kBFloat16;
    EXPECT_EQ(instructionsFor(type), sixteen ? widestInstructions() : wide) << nameOf(type);
    EXPECT_EQ(reduceKernel(type, ReduceOp::kMax),
              reduceKernel(instructionsFor(type), type, ReduceOp::kMax));
  }
  if (widestInstructions() == Instructions::kAvx512) {
    EXPECT_EQ(reductionInstructions(), "avx2, avx512 for half and bfloat16");
  }
  for (Instructions isa : runnable()) {
    useInstructions(isa);
    EXPECT_EQ(reductionInstructions(), instructionsName(isa));
    for (DataType type : kAllDataTypes) {
      EXPECT_EQ(instructionsFor(type), isa);
      EXPECT_EQ(reduceKernel(type, ReduceOp::kSum), reduceKernel(isa, type, ReduceOp::kSum));
    }
  }
  useInstructions(std::nullopt);
  EXPECT_EQ(instructionsFor(DataType::kInt64), wide);
  for (Instructions isa : kAllInstructions) {
    EXPECT_EQ(instructionsNamed(instructionsName(isa)), isa);
    if (isa <= widestInstructions()) continue;
    try {
      useInstructions(isa);
      FAIL() << instructionsName(isa);
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("this CPU does not run"));
    }
  }
  EXPECT_EQ(instructionsNamed("sse9"), std::nullopt);
}

}  // namespace
}  // namespace distrun::comm
