#pragma once

#include <string>

#include <torch/types.h>

namespace distrun::data {

enum class MnistSplit { kTrain, kTest };

// The two IDX files of one MNIST split, as found on disk.
struct MnistFiles {
  std::string images;  // .../train-images-idx3-ubyte[.gz]
  std::string labels;  // .../train-labels-idx1-ubyte[.gz]
};

// One MNIST split in memory. The tensors are CPU tensors owned by this
// struct (no views of a file or buffer).
struct MnistData {
  // N×1×28×28 float32, normalised as torchvision's MNIST example does:
  // (x/255 - 0.1307) / 0.3081.
  torch::Tensor images;
  // N int64, each 0-9.
  torch::Tensor labels;
};

// The files of `split` under `root`, in torchvision's layout: first
// root/MNIST/raw/, then root itself (when root is the raw folder). In each
// folder the uncompressed file is preferred over its `.gz`. Throws IoError
// (exit 74) naming the folders searched and how to get the data when no
// folder holds both files.
MnistFiles findMnistFiles(const std::string& root, MnistSplit split);

// Reads `split` from findMnistFiles(root, split). Throws IoError as that
// does and as readIdxFile does; DataError (exit 65) when a file is not an
// MNIST file: images not N×28×28, labels not one-dimensional, counts that
// differ, a label above 9. Thread-safe.
MnistData loadMnist(const std::string& root, MnistSplit split);

}  // namespace distrun::data
