#include "distrun/comm/check_values.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace distrun::comm {

void storeValue(DataType t, void* base, size_t i, double v) {
  switch (t) {
    case DataType::kFloat32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      static_cast<double*>(base)[i] = v;
      break;
    case DataType::kFloat16:
      static_cast<Half*>(base)[i] = toHalf(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<BFloat16*>(base)[i] = toBFloat16(static_cast<float>(v));
      break;
    case DataType::kInt32:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v);
      break;
    case DataType::kInt64:
      static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v);
      break;
  }
}

double loadValue(DataType t, const void* base, size_t i) {
  switch (t) {
    case DataType::kFloat32:
      return static_cast<const float*>(base)[i];
    case DataType::kFloat64:
      return static_cast<const double*>(base)[i];
    case DataType::kFloat16:
      return toFloat(static_cast<const Half*>(base)[i]);
    case DataType::kBFloat16:
      return toFloat(static_cast<const BFloat16*>(base)[i]);
    case DataType::kInt32:
      return static_cast<const int32_t*>(base)[i];
    case DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(base)[i]);
  }
  return 0;
}

double reductionInput(ReduceOp op, int rank, int size, size_t i) {
  const auto r = static_cast<size_t>(rank);
  switch (op) {
    case ReduceOp::kProd:
      if (i % static_cast<size_t>(size) == r) return 2;
      return (i + r) % 3 == 0 ? -1 : 1;
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return static_cast<double>((i * 7 + r * 11) % 13) - 6;
    default:
      return static_cast<double>((i * 3 + r * 5) % 5) - 2;
  }
}

double reductionResult(ReduceOp op, DataType type, int size, size_t i) {
  double acc = reductionInput(op, 0, size, i);
  for (int r = 1; r < size; ++r) {
    const double v = reductionInput(op, r, size, i);
    switch (op) {
      case ReduceOp::kProd:
        acc *= v;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  if (op != ReduceOp::kAvg) return acc;
  return isFloating(type) ? acc / size : std::trunc(acc / size);
}

double markerValue(int rank, size_t i) {
  return static_cast<double>(rank * 100 + static_cast<int>(i % 97));
}

double tolerance(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return 1e-6;
    case DataType::kFloat64:
      return 1e-12;
    case DataType::kFloat16:
      return 1e-3;
    case DataType::kBFloat16:
      return 8e-3;
    default:
      return 0;
  }
}

bool matches(DataType type, double got, double want) {
  return std::fabs(got - want) <= tolerance(type) * std::max(1.0, std::fabs(want));
}

}  // namespace distrun::comm
