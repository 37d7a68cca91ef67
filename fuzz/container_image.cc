// Fuzzes the container image reader (distrun/container/image_file.h, sif.h)
// with any file content: openImage either throws ImageError or places a
// root file system that lies within the file.
#include <sys/stat.h>

#include <string>

#include "distrun/container/image_file.h"
#include "distrun/container/sif.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view file = distrun::fuzz::asText(data, size);
  static const std::string path = distrun::fuzz::scratchPath("input.sif");
  distrun::fuzz::writeScratch(path, file);
  distrun::container::ImageFile image;
  if (distrun::fuzz::expectingErrors([&] { image = distrun::container::openImage(path); })) {
    distrun::fuzz::check(image.rootOffset <= size && image.rootSize <= size - image.rootOffset,
                         "the root file system lies outside the file");
  }
  distrun::fuzz::expectingErrors([&] { (void)distrun::container::readSif(path); });
  return 0;
}
