#include "distrun/data/mnist.h"

#include <ATen/ATen.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/data/idx.h"
#include "distrun/data/test_files.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::data {
namespace {

using testing::failureOf;
using testing::gzip;
using testing::TempDir;
using testing::writeBytes;

constexpr const char* kHint =
    "run scripts/prepare-mnist, or give the folder of a torchvision MNIST "
    "download";

// What one fake MNIST split holds: image i is side×side pixels of value
// 51*i % 256; the label file holds `labels`.
struct FakeSplit {
  std::vector<uint8_t> labels = {3, 1, 4, 1, 5};
  int64_t imageCount = 5;
  int64_t side = 28;
  bool gzipped = false;
};

void writeSplit(const std::string& folder, const std::string& prefix, const FakeSplit& split) {
  IdxArray images{{split.imageCount, split.side, split.side}, {}};
  for (int64_t i = 0; i < split.imageCount; ++i) {
    images.bytes.insert(images.bytes.end(), static_cast<size_t>(split.side * split.side),
                        static_cast<uint8_t>(51 * i % 256));
  }
  IdxArray labels{{static_cast<int64_t>(split.labels.size())}, split.labels};
  std::string suffix = split.gzipped ? ".gz" : "";
  std::vector<uint8_t> imageFile = encodeIdx(images);
  std::vector<uint8_t> labelFile = encodeIdx(labels);
  writeBytes(folder + "/" + prefix + "-images-idx3-ubyte" + suffix,
             split.gzipped ? gzip(imageFile) : imageFile);
  writeBytes(folder + "/" + prefix + "-labels-idx1-ubyte" + suffix,
             split.gzipped ? gzip(labelFile) : labelFile);
}

class MnistTest : public ::testing::Test {
 protected:
  std::string raw() const { return dir_.path() + "/MNIST/raw"; }
  TempDir dir_;
};

TEST_F(MnistTest, LoadsTorchvisionsLayoutNormalised) {
  writeSplit(raw(), "train", {});
  MnistData data = loadMnist(dir_.path(), MnistSplit::kTrain);
  EXPECT_EQ(data.images.sizes(), at::IntArrayRef({5, 1, 28, 28}));
  EXPECT_EQ(data.images.scalar_type(), at::kFloat);
  EXPECT_EQ(data.labels.scalar_type(), at::kLong);
  EXPECT_EQ(data.labels.sizes(), at::IntArrayRef({5}));
  std::vector<int64_t> labels(data.labels.data_ptr<int64_t>(), data.labels.data_ptr<int64_t>() + 5);
  EXPECT_THAT(labels, ::testing::ElementsAre(3, 1, 4, 1, 5));
  // Image 0 is all 0, image 1 all 51, image 4 all 204.
  EXPECT_FLOAT_EQ(data.images[0][0][0][0].item<float>(), (0.0f - 0.1307f) / 0.3081f);
  EXPECT_FLOAT_EQ(data.images[1][0][27][27].item<float>(), (0.2f - 0.1307f) / 0.3081f);
  EXPECT_FLOAT_EQ(data.images[4][0][13][5].item<float>(), (0.8f - 0.1307f) / 0.3081f);
}

TEST_F(MnistTest, AcceptsTheRawFolderItselfAndGzipFiles) {
  writeSplit(raw(), "t10k", {.labels = {9, 0}, .imageCount = 2, .side = 28, .gzipped = true});
  MnistFiles files = findMnistFiles(raw(), MnistSplit::kTest);
  EXPECT_EQ(files.images, raw() + "/t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(files.labels, raw() + "/t10k-labels-idx1-ubyte.gz");
  MnistData data = loadMnist(raw(), MnistSplit::kTest);
  EXPECT_EQ(data.labels.size(0), 2);
  EXPECT_EQ(data.labels[0].item<int64_t>(), 9);
}

TEST_F(MnistTest, PrefersPlainFilesOverGzip) {
  writeSplit(raw(), "train", {.labels = {7}, .imageCount = 1, .side = 28, .gzipped = true});
  writeSplit(raw(), "train", {.labels = {2, 2}, .imageCount = 2, .side = 28, .gzipped = false});
  MnistFiles files = findMnistFiles(dir_.path(), MnistSplit::kTrain);
  EXPECT_EQ(files.images, raw() + "/train-images-idx3-ubyte");
  EXPECT_EQ(loadMnist(dir_.path(), MnistSplit::kTrain).labels.size(0), 2);
}

TEST_F(MnistTest, MissingFilesSayWhereItLookedAndWhatToDo) {
  writeSplit(raw(), "train", {});
  testing::Failure f = failureOf([&] { loadMnist(dir_.path(), MnistSplit::kTest); });
  EXPECT_EQ(f.message,
            "no MNIST files t10k-images-idx3-ubyte[.gz] and "
            "t10k-labels-idx1-ubyte[.gz] in '" +
                raw() + "' or '" + dir_.path() + "': " + kHint);
  EXPECT_EQ(f.code, ExitCode::kIo);
  std::string nowhere = dir_.file("nowhere");
  f = failureOf([&] { loadMnist(nowhere, MnistSplit::kTrain); });
  EXPECT_EQ(f.message, "MNIST folder '" + nowhere + "' does not exist: " + kHint);
  EXPECT_EQ(f.code, ExitCode::kIo);
}

TEST_F(MnistTest, AHalfPresentSplitNamesTheMissingFile) {
  writeSplit(raw(), "train", {});
  std::filesystem::remove(raw() + "/train-labels-idx1-ubyte");
  testing::Failure f = failureOf([&] { loadMnist(dir_.path(), MnistSplit::kTrain); });
  EXPECT_EQ(f.message, "'" + raw() +
                           "' has train-images-idx3-ubyte but no "
                           "train-labels-idx1-ubyte[.gz]: " +
                           kHint);
  EXPECT_EQ(f.code, ExitCode::kIo);
}

TEST_F(MnistTest, RejectsMismatchedCounts) {
  writeSplit(raw(), "train", {.labels = {1, 2, 3}, .imageCount = 4, .side = 28, .gzipped = false});
  testing::Failure f = failureOf([&] { loadMnist(dir_.path(), MnistSplit::kTrain); });
  EXPECT_EQ(f.message, "images and labels do not match: 4 images in " + raw() +
                           "/train-images-idx3-ubyte, 3 labels in " + raw() +
                           "/train-labels-idx1-ubyte");
  EXPECT_EQ(f.code, ExitCode::kData);
}

TEST_F(MnistTest, RejectsALabelAboveNine) {
  writeSplit(raw(), "train", {.labels = {1, 9, 12}, .imageCount = 3, .side = 28, .gzipped = false});
  testing::Failure f = failureOf([&] { loadMnist(dir_.path(), MnistSplit::kTrain); });
  EXPECT_EQ(f.message, raw() +
                           "/train-labels-idx1-ubyte: label 12 at index 2: "
                           "expected a digit 0-9");
  EXPECT_EQ(f.code, ExitCode::kData);
}

TEST_F(MnistTest, RejectsImagesThatAreNot28By28) {
  writeSplit(raw(), "train", {.labels = {3, 1}, .imageCount = 2, .side = 32, .gzipped = false});
  testing::Failure f = failureOf([&] { loadMnist(dir_.path(), MnistSplit::kTrain); });
  EXPECT_EQ(f.message, raw() +
                           "/train-images-idx3-ubyte: images are 32×32: "
                           "expected 28×28 MNIST digits");
  EXPECT_EQ(f.code, ExitCode::kData);
}

TEST_F(MnistTest, RejectsSwappedFiles) {
  writeSplit(raw(), "train", {});
  std::filesystem::rename(raw() + "/train-labels-idx1-ubyte", raw() + "/x");
  std::filesystem::rename(raw() + "/train-images-idx3-ubyte", raw() + "/train-labels-idx1-ubyte");
  std::filesystem::rename(raw() + "/x", raw() + "/train-images-idx3-ubyte");
  testing::Failure f = failureOf([&] { loadMnist(dir_.path(), MnistSplit::kTrain); });
  EXPECT_EQ(f.message, raw() +
                           "/train-images-idx3-ubyte: wrong magic number "
                           "0x00000801: expected 0x00000803 (unsigned-byte "
                           "IDX with 3 dimensions)");
  EXPECT_EQ(f.code, ExitCode::kData);
}

// The files scripts/prepare-mnist writes, when it has been run: its split
// rule gives these sizes and per-class counts.
TEST(PreparedMnistTest, LoadsTheFilesOfScriptsPrepareMnist) {
  std::string root = std::string(DISTRUN_SOURCE_DIR) + "/data";
  if (!std::filesystem::exists(root + "/MNIST/raw/train-images-idx3-ubyte")) {
    GTEST_SKIP() << "no " << root << "/MNIST: run scripts/prepare-mnist";
  }
  MnistData train = loadMnist(root, MnistSplit::kTrain);
  MnistData test = loadMnist(root, MnistSplit::kTest);
  EXPECT_EQ(train.images.sizes(), at::IntArrayRef({8000, 1, 28, 28}));
  EXPECT_EQ(test.images.sizes(), at::IntArrayRef({2000, 1, 28, 28}));
  at::Tensor trainCounts = at::bincount(train.labels);
  at::Tensor testCounts = at::bincount(test.labels);
  std::vector<int64_t> counts(trainCounts.data_ptr<int64_t>(),
                              trainCounts.data_ptr<int64_t>() + 10);
  EXPECT_THAT(counts, ::testing::ElementsAre(805, 894, 800, 817, 799, 685, 813, 853, 762, 772));
  EXPECT_EQ(testCounts[0].item<int64_t>(), 196);
}

}  // namespace
}  // namespace distrun::data
