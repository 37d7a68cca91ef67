#include "distrun/comm/reduce.h"

#include <algorithm>
#include <cstdint>

#include "distrun/comm/float16_arrays.h"

namespace distrun::comm {

namespace {

struct Sum {
  template <class T>
  static T apply(T a, T b) {
    return a + b;
  }
};
struct Prod {
  template <class T>
  static T apply(T a, T b) {
    return a * b;
  }
};
struct Min {
  template <class T>
  static T apply(T a, T b) {
    return std::min(a, b);
  }
};
struct Max {
  template <class T>
  static T apply(T a, T b) {
    return std::max(a, b);
  }
};

template <class T, class Op>
void reduceNative(void* out, const void* a, const void* b, size_t n) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = Op::apply(x[i], y[i]);
}

// Half and bfloat16: widen a block of each input to float, reduce, round
// back; a block of floats per operand stays in L1.
constexpr size_t kWidenedBlock = 1024;

template <class T, class Op>
void reduceWidened(void* out, const void* a, const void* b, size_t n) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  float wideX[kWidenedBlock];
  float wideY[kWidenedBlock];
  for (size_t at = 0; at < n; at += kWidenedBlock) {
    const size_t m = std::min(kWidenedBlock, n - at);
    widen(wideX, x + at, m);
    widen(wideY, y + at, m);
    for (size_t i = 0; i < m; ++i) wideX[i] = Op::apply(wideX[i], wideY[i]);
    narrow(o + at, wideX, m);
  }
}

template <class Op>
ReduceKernel kernelFor(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return reduceNative<float, Op>;
    case DataType::kFloat64:
      return reduceNative<double, Op>;
    case DataType::kFloat16:
      return reduceWidened<Half, Op>;
    case DataType::kBFloat16:
      return reduceWidened<BFloat16, Op>;
    case DataType::kInt32:
      return reduceNative<int32_t, Op>;
    case DataType::kInt64:
      return reduceNative<int64_t, Op>;
  }
  return nullptr;
}

template <class T>
void divideNative(void* data, size_t n, int divisor) {
  T* d = static_cast<T*>(data);
  const T v = static_cast<T>(divisor);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] / v);
}

template <class T>
void divideWidened(void* data, size_t n, int divisor) {
  T* d = static_cast<T*>(data);
  const float v = static_cast<float>(divisor);
  float wide[kWidenedBlock];
  for (size_t at = 0; at < n; at += kWidenedBlock) {
    const size_t m = std::min(kWidenedBlock, n - at);
    widen(wide, d + at, m);
    for (size_t i = 0; i < m; ++i) wide[i] /= v;
    narrow(d + at, wide, m);
  }
}

}  // namespace

ReduceKernel reduceKernel(DataType type, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return kernelFor<Sum>(type);
    case ReduceOp::kProd:
      return kernelFor<Prod>(type);
    case ReduceOp::kMin:
      return kernelFor<Min>(type);
    case ReduceOp::kMax:
      return kernelFor<Max>(type);
  }
  return nullptr;
}

void divideInPlace(void* data, size_t n, DataType type, int divisor) {
  switch (type) {
    case DataType::kFloat32:
      return divideNative<float>(data, n, divisor);
    case DataType::kFloat64:
      return divideNative<double>(data, n, divisor);
    case DataType::kFloat16:
      return divideWidened<Half>(data, n, divisor);
    case DataType::kBFloat16:
      return divideWidened<BFloat16>(data, n, divisor);
    case DataType::kInt32:
      return divideNative<int32_t>(data, n, divisor);
    case DataType::kInt64:
      return divideNative<int64_t>(data, n, divisor);
  }
}

}  // namespace distrun::comm
