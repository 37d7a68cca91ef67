// Fuzzes the snapshot reader (distrun/train/snapshot_file.h) with any file
// content: it either throws DataError or returns a payload that the writer
// wraps into exactly the bytes read; findLatestSnapshot, given the input as
// PATH and its first half as PATH.prev, finds a good one or throws.
#include <sstream>
#include <string>

#include "distrun/train/snapshot_file.h"
#include "fuzz/fuzz_support.h"

namespace {

void checkRewrite(const std::string& payload, std::string_view file) {
  static const std::string path = distrun::fuzz::scratchPath("rewritten.snapshot");
  distrun::train::writeSnapshotFile(path, payload);
  distrun::fuzz::check(distrun::fuzz::readScratch(path) == file,
                       "the payload is written back as another file than it was read from");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view file = distrun::fuzz::asText(data, size);
  static const std::string path = distrun::fuzz::scratchPath("input.snapshot");
  distrun::fuzz::writeScratch(path, file);
  distrun::fuzz::writeScratch(path + ".prev", file.substr(0, file.size() / 2));
  std::string payload;
  if (distrun::fuzz::expectingErrors([&] { payload = distrun::train::readSnapshotFile(path); })) {
    checkRewrite(payload, file);
  }
  std::ostringstream warnings;
  distrun::fuzz::expectingErrors([&] { (void)distrun::train::findLatestSnapshot(path, warnings); });
  return 0;
}
