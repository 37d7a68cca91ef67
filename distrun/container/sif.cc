#include "distrun/container/sif.h"

#include "distrun/common/error.h"
#include "distrun/container/image_file.h"

// Placeholder until the SIF reader and writer land (issue 24, in progress on
// a branch): every call says so rather than guessing at the layout.
namespace distrun::container {

SifFile readSif(const std::string& path) {
  throw ImageError(ExitCode::kData, "container image " + path + ": SIF reading is not built yet");
}

void writeSif(const std::string&, const std::string& out, const SifOptions&) {
  throw IoError("writing SIF file " + out + ": not built yet: use --format squashfs");
}

}  // namespace distrun::container
