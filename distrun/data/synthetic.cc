#include "distrun/data/synthetic.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::data {

namespace {

constexpr int64_t kInputs = 20;

}  // namespace

RegressionData makeSyntheticRegression(int64_t size, uint64_t seed) {
  if (size < 0) {
    throw UsageError(
        fmt::format("synthetic dataset size {} is negative: expected 0 or more", size));
  }
  at::Generator generator = at::detail::createCPUGenerator(seed);
  at::Tensor inputs = at::empty({size, kInputs}, at::kFloat);
  at::Tensor targets = at::empty({size, 1}, at::kFloat);
  // One rand(20) and one rand(1) per sample, in Python's order: drawing
  // each tensor whole would consume the stream in another order.
  for (int64_t i = 0; i < size; ++i) {
    inputs[i].copy_(at::rand({kInputs}, generator));
    targets[i].copy_(at::rand({1}, generator));
  }
  return {inputs, targets};
}

}  // namespace distrun::data
