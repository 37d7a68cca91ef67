#pragma once

// Where MNIST's files are, found without reading them (and without
// LibTorch): `distrun train mnist` looks before it starts a rank, the
// loader (mnist.h) before it reads.
#include <string>

namespace distrun::data {

enum class MnistSplit { kTrain, kTest };

// The two IDX files of one MNIST split, as found on disk.
struct MnistFiles {
  std::string images;  // .../train-images-idx3-ubyte[.gz]
  std::string labels;  // .../train-labels-idx1-ubyte[.gz]
};

// The files of `split` under `root`, in torchvision's layout: first
// root/MNIST/raw/, then root itself (when root is the raw folder). In each
// folder the uncompressed file is preferred over its `.gz`. Throws IoError
// (exit 74) naming the folders searched and how to get the data when no
// folder holds both files.
MnistFiles findMnistFiles(const std::string& root, MnistSplit split);

// Both splits found under `root` (the value of `distrun train mnist
// --data`): IoError as findMnistFiles, its advice naming --data DIR.
void checkMnistFolder(const std::string& root);

}  // namespace distrun::data
