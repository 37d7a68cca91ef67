#pragma once

// `distrun wrap --wrappers PREFIX`: PREFIX/bin/NAME for programs in the
// image, each a small sh script that runs NAME inside the image from a host
// shell, under srun and under `distrun run`, as the LUMI container
// wrapper's <install_dir>/bin does. Inside the image already (distrun enter
// sets DISTRUN_CONTAINER to the image's path) a wrapper execs the program
// directly, so wrappers calling wrappers never nest containers.
#include <cstddef>
#include <string>
#include <vector>

#include "distrun/container/wrap_options.h"

namespace distrun::container {

// A program in the image that gets a wrapper.
struct WrappedProgram {
  std::string name;         // the wrapper's file name
  std::string pathInImage;  // absolute, as the running image sees it
};

// The wrapper of `program`: `distrun` and `image` are absolute host paths,
// baked in. It runs `program` by its path inside the image, so programs
// that look at argv[0] (a venv's python finding its pyvenv.cfg, busybox's
// applets) behave as they do when started from their folder.
std::string wrapperScript(const std::string& distrun, const std::string& image,
                          const WrappedProgram& program);

// The folders wrapped when --wrap-path is not given: each --dir DEST's bin/
// that exists in the staged tree at `root`, then the Python environment's
// bin/ (/opt/env/bin, --pip) and /usr/bin/python3 when the image has them.
std::vector<std::string> defaultWrapPaths(const std::string& root,
                                          const std::vector<DirSource>& dirs);

// The programs under `paths` (inside the image) in the tree at `root`: for
// a folder, every entry in it (not below) that is an executable file or a
// symlink to one, resolved within the image, in name order, names starting
// with '.' left out; a path that is itself an executable file is that one
// program. The first program of a name wins, as on PATH. Paths the image
// does not have are skipped.
std::vector<WrappedProgram> programsToWrap(const std::string& root,
                                           const std::vector<std::string>& paths);

// Writes PREFIX/bin/NAME (mode 0755, each written atomically) for every
// program, creating PREFIX/bin; a wrapper already there is replaced.
// Throws IoError naming the file that could not be written.
void writeWrappers(const std::string& prefix, const std::string& distrun, const std::string& image,
                   const std::vector<WrappedProgram>& programs);

}  // namespace distrun::container
