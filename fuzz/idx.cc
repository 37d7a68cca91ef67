// Fuzzes the IDX reader (distrun/data/idx.h) with any file content: it
// either throws DataError or returns an array whose bytes are the product
// of its dimensions and which, for an uncompressed file, encodes back to
// exactly the file.
#include <string>

#include "distrun/data/idx.h"
#include "fuzz/fuzz_support.h"

namespace {

bool gzipped(std::string_view bytes) {
  return bytes.size() >= 2 && bytes.substr(0, 2) == "\x1f\x8b";
}

void checkArray(const distrun::data::IdxArray& array, std::string_view file) {
  size_t elements = 1;
  for (int64_t dim : array.dims) elements *= static_cast<size_t>(dim);
  distrun::fuzz::check(array.bytes.size() == elements, "bytes differ from the dimensions' product");
  if (gzipped(file)) return;
  std::vector<uint8_t> again = distrun::data::encodeIdx(array);
  distrun::fuzz::check(
      std::string_view(reinterpret_cast<const char*>(again.data()), again.size()) == file,
      "the array encodes to another file than it was read from");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view file = distrun::fuzz::asText(data, size);
  static const std::string path = distrun::fuzz::scratchPath("input.idx");
  distrun::fuzz::writeScratch(path, file);
  distrun::data::IdxArray array;
  if (distrun::fuzz::expectingErrors([&] { array = distrun::data::readIdxFile(path); })) {
    checkArray(array, file);
  }
  return 0;
}
