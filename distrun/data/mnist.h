#pragma once

#include <string>

#include <torch/types.h>

#include "distrun/data/mnist_files.h"

namespace distrun::data {

// One MNIST split in memory. The tensors are CPU tensors owned by this
// struct (no views of a file or buffer).
struct MnistData {
  // N×1×28×28 float32, normalised as torchvision's MNIST example does:
  // (x/255 - 0.1307) / 0.3081.
  torch::Tensor images;
  // N int64, each 0-9.
  torch::Tensor labels;
};

// Reads `split` from findMnistFiles(root, split). Throws IoError as that
// does and as readIdxFile does; DataError (exit 65) when a file is not an
// MNIST file: images not N×28×28, labels not one-dimensional, counts that
// differ, a label above 9. Thread-safe.
MnistData loadMnist(const std::string& root, MnistSplit split);

}  // namespace distrun::data
