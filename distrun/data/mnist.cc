#include "distrun/data/mnist.h"

#include <ATen/ATen.h>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/data/idx.h"

namespace distrun::data {

namespace {

constexpr int64_t kSide = 28;
constexpr double kMean = 0.1307;
constexpr double kStd = 0.3081;
void checkImageSize(const std::string& path, const IdxArray& images) {
  if (images.dims[1] == kSide && images.dims[2] == kSide) return;
  throw DataError(fmt::format("{}: images are {}×{}: expected 28×28 MNIST digits", path,
                              images.dims[1], images.dims[2]));
}

void checkCounts(const MnistFiles& files, const IdxArray& images, const IdxArray& labels) {
  if (images.dims[0] == labels.dims[0]) return;
  throw DataError(fmt::format("images and labels do not match: {} images in {}, {} labels in {}",
                              images.dims[0], files.images, labels.dims[0], files.labels));
}

void checkLabels(const std::string& path, const IdxArray& labels) {
  for (size_t i = 0; i < labels.bytes.size(); ++i) {
    if (labels.bytes[i] > 9) {
      throw DataError(
          fmt::format("{}: label {} at index {}: expected a digit 0-9", path, labels.bytes[i], i));
    }
  }
}

// Copies `array` into a tensor of `shape` and element type `type`.
at::Tensor toTensor(IdxArray& array, at::IntArrayRef shape, at::ScalarType type) {
  return at::from_blob(array.bytes.data(), shape, at::kByte).to(type);
}

}  // namespace

MnistData loadMnist(const std::string& root, MnistSplit split) {
  MnistFiles files = findMnistFiles(root, split);
  IdxArray images = readIdxFile(files.images, 3);
  checkImageSize(files.images, images);
  IdxArray labels = readIdxFile(files.labels, 1);
  checkCounts(files, images, labels);
  checkLabels(files.labels, labels);
  at::Tensor pixels = toTensor(images, {images.dims[0], 1, kSide, kSide}, at::kFloat);
  return {pixels.div_(255).sub_(kMean).div_(kStd), toTensor(labels, {labels.dims[0]}, at::kLong)};
}

}  // namespace distrun::data
