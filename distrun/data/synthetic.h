#pragma once

#include <cstdint>

#include <torch/types.h>

namespace distrun::data {

// The regression set of PyTorch's multi-GPU DDP tutorial, MyTrainDataset(size)
// (pytorch/examples distributed/ddp-tutorial-series/datautils.py): `size`
// samples of (torch.rand(20), torch.rand(1)), stacked. CPU float32 tensors
// owned by this struct.
struct RegressionData {
  torch::Tensor inputs;   // size×20, uniform in [0, 1)
  torch::Tensor targets;  // size×1, uniform in [0, 1)
};

// Draws the set sample by sample, rand(20) then rand(1), from a CPU
// generator seeded with `seed`: bit for bit what Python gives with
//   g = torch.Generator(); g.manual_seed(seed)
//   [(torch.rand(20, generator=g), torch.rand(1, generator=g))
//    for _ in range(size)]
// Throws UsageError when size is negative. Thread-safe: the generator is
// the call's own.
RegressionData makeSyntheticRegression(int64_t size = 2048, uint64_t seed = 0);

}  // namespace distrun::data
