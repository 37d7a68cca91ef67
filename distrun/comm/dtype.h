#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace distrun::comm {

// The element types every backend moves and reduces.
enum class DataType { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64 };

// The reductions. kAvg is the sum divided by the world size; for integer
// types the division truncates toward zero, as NCCL's ncclAvg does.
enum class ReduceOp { kSum, kProd, kMin, kMax, kAvg };

inline constexpr DataType kAllDataTypes[] = {DataType::kFloat32, DataType::kFloat64,
                                             DataType::kFloat16, DataType::kBFloat16,
                                             DataType::kInt32,   DataType::kInt64};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin,
                                             ReduceOp::kMax, ReduceOp::kAvg};

size_t sizeOf(DataType type);
bool isFloating(DataType type);

// nccl-tests' names: float, double, half, bfloat16, int32, int64.
std::string_view nameOf(DataType type);
// sum, prod, min, max, avg.
std::string_view nameOf(ReduceOp op);

// Parses the names above (and the aliases f32/float32, f64/float64,
// f16/float16, bf16, int/i32, i64). Throws UsageError naming `what`.
DataType parseDataType(std::string_view text, std::string_view what);
ReduceOp parseReduceOp(std::string_view text, std::string_view what);

// IEEE 754 binary16 and bfloat16 as storage types. Conversions from float
// round to nearest even and keep NaN a NaN; conversions to float are exact.
struct Half {
  uint16_t bits = 0;
};
struct BFloat16 {
  uint16_t bits = 0;
};

Half toHalf(float value);
float toFloat(Half value);
BFloat16 toBFloat16(float value);
float toFloat(BFloat16 value);

}  // namespace distrun::comm
