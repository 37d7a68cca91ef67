#include "distrun/comm/reduce.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include <fmt/format.h>

#include "distrun/comm/reduce_kernels.h"

namespace distrun::comm {

namespace {

Instructions probeCpu() {
#if defined(DISTRUN_REDUCE_X86)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
    return Instructions::kAvx512;
  }
  if (__builtin_cpu_supports("avx2")) return Instructions::kAvx2;
#endif
  return Instructions::kBaseline;
}

// -1: the default (instructionsFor); otherwise the Instructions chosen.
std::atomic<int> chosen{-1};

bool sixteenBits(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kBFloat16;
}

// One instruction set's two entry points (reduce_kernels.h).
struct Kernels {
  ReduceKernel (*reduce)(DataType, ReduceOp);
  void (*divide)(void*, size_t, DataType, int);
};

Kernels kernelsOf(Instructions isa) {
  switch (isa) {
#if defined(DISTRUN_REDUCE_X86)
    case Instructions::kAvx512:
      return {detail::avx512::reduceKernel, detail::avx512::divideInPlace};
    case Instructions::kAvx2:
      return {detail::avx2::reduceKernel, detail::avx2::divideInPlace};
#endif
    default:
      return {detail::baseline::reduceKernel, detail::baseline::divideInPlace};
  }
}

}  // namespace

std::string_view instructionsName(Instructions isa) {
  switch (isa) {
    case Instructions::kBaseline:
      return "baseline";
    case Instructions::kAvx2:
      return "avx2";
    case Instructions::kAvx512:
      return "avx512";
  }
  return "?";
}

std::optional<Instructions> instructionsNamed(std::string_view name) {
  for (Instructions isa : kAllInstructions) {
    if (instructionsName(isa) == name) return isa;
  }
  return std::nullopt;
}

Instructions widestInstructions() {
  static const Instructions widest = probeCpu();
  return widest;
}

void useInstructions(std::optional<Instructions> isa) {
  if (isa && *isa > widestInstructions()) {
    throw std::invalid_argument(fmt::format("this CPU does not run {} (the widest it runs: {})",
                                            instructionsName(*isa),
                                            instructionsName(widestInstructions())));
  }
  chosen.store(isa ? static_cast<int>(*isa) : -1, std::memory_order_relaxed);
}

Instructions instructionsFor(DataType type) {
  const int isa = chosen.load(std::memory_order_relaxed);
  if (isa >= 0) return static_cast<Instructions>(isa);
  return sixteenBits(type) ? widestInstructions()
                           : std::min(widestInstructions(), Instructions::kAvx2);
}

std::string reductionInstructions() {
  const Instructions wide = instructionsFor(DataType::kFloat32);
  const Instructions narrow = instructionsFor(DataType::kFloat16);
  if (wide == narrow) return std::string(instructionsName(wide));
  return fmt::format("{}, {} for half and bfloat16", instructionsName(wide),
                     instructionsName(narrow));
}

ReduceKernel reduceKernel(Instructions isa, DataType type, ReduceOp op) {
  return kernelsOf(isa).reduce(type, op);
}

void divideInPlace(Instructions isa, void* data, size_t n, DataType type, int divisor) {
  kernelsOf(isa).divide(data, n, type, divisor);
}

ReduceKernel reduceKernel(DataType type, ReduceOp op) {
  return reduceKernel(instructionsFor(type), type, op);
}

void divideInPlace(void* data, size_t n, DataType type, int divisor) {
  divideInPlace(instructionsFor(type), data, n, type, divisor);
}

}  // namespace distrun::comm
