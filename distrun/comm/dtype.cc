#include "distrun/comm/dtype.h"

#include <bit>
#include <cmath>

#include "distrun/common/error.h"

namespace distrun::comm {

size_t sizeOf(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
      return 8;
    case DataType::kFloat16:
      return 2;
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt32:
      return 4;
    case DataType::kInt64:
      return 8;
  }
  return 0;
}

bool isFloating(DataType type) { return type != DataType::kInt32 && type != DataType::kInt64; }

std::string_view nameOf(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return "float";
    case DataType::kFloat64:
      return "double";
    case DataType::kFloat16:
      return "half";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
  }
  return "?";
}

std::string_view nameOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kAvg:
      return "avg";
  }
  return "?";
}

DataType parseDataType(std::string_view text, std::string_view what) {
  struct Alias {
    std::string_view name;
    DataType type;
  };
  static constexpr Alias kAliases[] = {
      {"float", DataType::kFloat32},   {"float32", DataType::kFloat32},
      {"f32", DataType::kFloat32},     {"double", DataType::kFloat64},
      {"float64", DataType::kFloat64}, {"f64", DataType::kFloat64},
      {"half", DataType::kFloat16},    {"float16", DataType::kFloat16},
      {"f16", DataType::kFloat16},     {"bfloat16", DataType::kBFloat16},
      {"bf16", DataType::kBFloat16},   {"int32", DataType::kInt32},
      {"int", DataType::kInt32},       {"i32", DataType::kInt32},
      {"int64", DataType::kInt64},     {"i64", DataType::kInt64},
  };
  for (const Alias& a : kAliases) {
    if (a.name == text) return a.type;
  }
  throw UsageError(std::string(what) + ": unknown data type '" + std::string(text) +
                   "' (expected float, double, half, bfloat16, int32 or int64)");
}

ReduceOp parseReduceOp(std::string_view text, std::string_view what) {
  for (ReduceOp op : kAllReduceOps) {
    if (nameOf(op) == text) return op;
  }
  throw UsageError(std::string(what) + ": unknown reduction '" + std::string(text) +
                   "' (expected sum, prod, min, max or avg)");
}

Half toHalf(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  const uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    const uint16_t nan = abs > 0x7f800000u ? 0x0200u : 0;
    return {static_cast<uint16_t>(sign | 0x7c00u | nan)};
  }
  if (abs >= 0x477ff000u) {  // rounds to above 65504: inf
    return {static_cast<uint16_t>(sign | 0x7c00u)};
  }
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal
    // Scale so that the half subnormal unit (2^-24) becomes 1, and let the
    // FPU round to nearest even.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;
    return {static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)))};
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits.
  const uint32_t rebased = abs - 0x38000000u;
  const uint32_t lsb = (rebased >> 13) & 1u;
  const uint32_t rounded = (rebased + 0x0fffu + lsb) >> 13;
  return {static_cast<uint16_t>(sign | rounded)};
}

float toFloat(Half value) {
  const uint32_t sign = static_cast<uint32_t>(value.bits & 0x8000u) << 16;
  const uint32_t exponent = (value.bits >> 10) & 0x1fu;
  const uint32_t mantissa = value.bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = static_cast<float>(mantissa) / 16777216.0f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  if (exponent == 0x1f) {
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

BFloat16 toBFloat16(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) {  // NaN stays a quiet NaN
    return {static_cast<uint16_t>((f >> 16) | 0x0040u)};
  }
  const uint32_t lsb = (f >> 16) & 1u;
  return {static_cast<uint16_t>((f + 0x7fffu + lsb) >> 16)};
}

float toFloat(BFloat16 value) {
  return std::bit_cast<float>(static_cast<uint32_t>(value.bits) << 16);
}

}  // namespace distrun::comm
