#pragma once

#include <torch/types.h>

namespace distrun::models {

// torch::max_pool2d(input, 2) for a contiguous float N x C x H x W tensor,
// bit for bit (values, which element of a window wins a tie, NaN), with
// cheaper bookkeeping: LibTorch keeps an int64 index per output and its
// single-thread CPU kernel took ~14 ms forward and backward for the MNIST
// CNN's 64 x 64 x 24 x 24 activations; this one keeps the winner's place in
// its 2x2 window in one byte. It runs on one thread: with more intra-op
// threads (--threads-per-rank), and for other inputs, torch::max_pool2d. The
// gradient is first-order only (no double backward).
torch::Tensor maxPool2x2(const torch::Tensor& input);

}  // namespace distrun::models
