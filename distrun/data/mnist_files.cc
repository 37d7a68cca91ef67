#include "distrun/data/mnist_files.h"

#include <filesystem>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::data {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHint =
    "run scripts/prepare-mnist, or give the folder of a torchvision MNIST "
    "download";

std::string filePrefix(MnistSplit split) { return split == MnistSplit::kTrain ? "train" : "t10k"; }

// `folder/name`, else `folder/name.gz`, else nothing.
std::optional<std::string> findFile(const fs::path& folder, const std::string& name) {
  for (const std::string& candidate : {name, name + ".gz"}) {
    std::error_code error;
    fs::path path = folder / candidate;
    if (fs::exists(path, error) && !fs::is_directory(path, error)) {
      return path.string();
    }
  }
  return std::nullopt;
}

[[noreturn]] void throwNotFound(const std::string& root, const std::vector<fs::path>& folders,
                                const std::string& images, const std::string& labels) {
  std::error_code error;
  if (!fs::exists(root, error)) {
    throw IoError(fmt::format("MNIST folder '{}' does not exist: {}", root, kHint));
  }
  throw IoError(fmt::format("no MNIST files {}[.gz] and {}[.gz] in '{}' or '{}': {}", images,
                            labels, folders[0].string(), folders[1].string(), kHint));
}

}  // namespace

MnistFiles findMnistFiles(const std::string& root, MnistSplit split) {
  std::string images = filePrefix(split) + "-images-idx3-ubyte";
  std::string labels = filePrefix(split) + "-labels-idx1-ubyte";
  std::vector<fs::path> folders = {fs::path(root) / "MNIST" / "raw", root};
  for (const fs::path& folder : folders) {
    std::optional<std::string> imagesPath = findFile(folder, images);
    std::optional<std::string> labelsPath = findFile(folder, labels);
    if (imagesPath && labelsPath) return {*imagesPath, *labelsPath};
    if (imagesPath || labelsPath) {
      fs::path found(imagesPath ? *imagesPath : *labelsPath);
      throw IoError(fmt::format("'{}' has {} but no {}[.gz]: {}", folder.string(),
                                found.filename().string(), imagesPath ? labels : images, kHint));
    }
  }
  throwNotFound(root, folders, images, labels);
}

void checkMnistFolder(const std::string& root) {
  for (MnistSplit split : {MnistSplit::kTrain, MnistSplit::kTest}) {
    try {
      findMnistFiles(root, split);
    } catch (const IoError& e) {
      throw IoError(fmt::format("{} with --data DIR", e.what()));
    }
  }
}

}  // namespace distrun::data
