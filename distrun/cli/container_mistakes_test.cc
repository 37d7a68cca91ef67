// The container flags' mistakes (--container, --bind, --container-runtime,
// distrun enter): one line, their exit code, nothing started.
#include "distrun/cli/mistakes_table.h"
#include "distrun/cli/source_paths_testing.h"

namespace distrun::cli {
namespace {

using testing::kNotAnImage;
using testing::kSourceDir;

// A SquashFS superblock and nothing else: openImage accepts it (the flags'
// checks come next); nothing ever mounts it here.
const std::string kImage = kSourceDir + "/distrun/cli/testdata/superblock_only.sqfs";

const Mistake kContainerMistakes[] = {
    {{"run", "--container", "/nonexistent/pytorch.sif", "train.py"},
     "container image /nonexistent/pytorch.sif: cannot open: No such file or directory: give the "
     "path of a .sif or SquashFS file (distrun wrap makes one)",
     false,
     {},
     ExitCode::kNoInput},
    {{"exec", "--container", kNotAnImage, "--", "true"},
     "container image " + kNotAnImage +
         ": neither a SIF file nor a SquashFS file system (no SIF_MAGIC, no hsqs superblock): "
         "build one with distrun wrap",
     false,
     {},
     ExitCode::kData},
    {{"train", "--container", "/nonexistent/pytorch.sif", "mnist"},
     "container image /nonexistent/pytorch.sif: cannot open",
     true,
     {},
     ExitCode::kNoInput},
    {{"bench", "--container", "/nonexistent/pytorch.sif", "all_reduce"},
     "container image /nonexistent/pytorch.sif: cannot open",
     true,
     {},
     ExitCode::kNoInput},
    {{"submit", "--container", "/nonexistent/pytorch.sif", "--", "run", "train.py"},
     "container image /nonexistent/pytorch.sif: cannot open",
     true,
     {},
     ExitCode::kNoInput},
    {{"run", "--bind", "/tmp", "train.py"},
     "--bind /tmp: no --container IMAGE to bind it into: add --container or drop --bind"},
    {{"exec", "--container-runtime", "docker", "--", "true"},
     "--container-runtime docker: expected auto, apptainer, singularity or distrun"},
    {{"exec", "--container-runtime", "apptainer", "--", "true"},
     "--container-runtime apptainer: no --container IMAGE to run: add --container or drop "
     "--container-runtime"},
    {{"run", "--container", kImage, "--bind", "/nonexistent/data", "train.py"},
     "--bind /nonexistent/data: /nonexistent/data does not exist on this host: bind an existing "
     "file or folder"},
    {{"exec", "--container", kImage, "--bind", "/tmp:data", "--", "true"},
     "--bind /tmp:data: DST is not absolute: expected SRC[:DST[:ro]] with an absolute DST"},
    {{"exec", "--container", kImage, "--bind", "/tmp:/data:rx", "--", "true"},
     "--bind /tmp:/data:rx: the option is not ro or rw: expected SRC[:DST[:ro]] with an absolute "
     "DST"},
    {{"enter"}, "enter: no IMAGE given: distrun enter [OPTIONS] IMAGE -- PROGRAM [ARGS...]"},
    {{"enter", kImage},
     "enter: no PROGRAM given to run in " + kImage +
         ": distrun enter [OPTIONS] IMAGE -- PROGRAM [ARGS...]"},
    {{"enter", kImage, "--"},
     "enter: no PROGRAM given to run in " + kImage +
         ": distrun enter [OPTIONS] IMAGE -- PROGRAM [ARGS...]"},
    {{"enter", "/nonexistent/pytorch.sif", "--", "python3"},
     "container image /nonexistent/pytorch.sif: cannot open",
     true,
     {},
     ExitCode::kNoInput},
};
INSTANTIATE_TEST_SUITE_P(Container, DistrunMistakeTest, ::testing::ValuesIn(kContainerMistakes));

// `distrun wrap --pip` and `--list`: refused before anything is staged.
const std::string kCondaEnv = kSourceDir + "/distrun/cli/testdata/conda_env_with_numpy.yml";
const Mistake kPipMistakes[] = {
    {{"wrap", "-o", "/tmp/x.sif", "--dir", kSourceDir + "/docs:/opt/docs", "--pip", "six"},
     "--pip six: the environment is made with the image's own Python: add --apt "
     "python3,python3-venv, or --base an image that has Python"},
    {{"wrap", "-o", "/tmp/x.sif", "--base", kImage, "--find-links", "/tmp"},
     "--find-links /tmp: is where --pip finds packages: give --pip too"},
    {{"wrap", "-o", "/tmp/x.sif", "--base", kImage, "--no-index"},
     "--no-index: is where --pip finds packages: give --pip too"},
    {{"wrap", "-o", "/tmp/x.sif", "--base", kImage, "--pip",
      "/nonexistent-distrun/requirements.txt"},
     "--pip /nonexistent-distrun/requirements.txt: does not exist: give a file on this host",
     false,
     {},
     ExitCode::kNoInput},
    {{"wrap", "-o", "/tmp/x.sif", "--base", kImage, "--pip", "six", "--find-links",
      "/nonexistent-distrun/wheels"},
     "--find-links /nonexistent-distrun/wheels: does not exist: give a folder on this host",
     false,
     {},
     ExitCode::kNoInput},
    {{"wrap", "-o", "/tmp/x.sif", "--base", kImage, "--pip", kCondaEnv},
     kCondaEnv +
         ":8: conda package 'numpy=1.26' cannot be installed: distrun wrap fills the image's "
         "environment from PyPI with pip and reaches no conda channel; list it under '- pip:' as "
         "a PyPI requirement, or take Debian's with --apt",
     false,
     {},
     ExitCode::kData},
    {{"wrap", "--list", kImage, "-o", "/tmp/x.sif"},
     "wrap --list " + kImage + ": takes no other flag: it reads an image, it builds none"},
    {{"wrap", "--list", kImage},
     kImage + ": has no /.singularity.d/labels.json: it was not built by distrun wrap (or by a "
              "tool that writes labels)",
     false,
     {},
     ExitCode::kData},
};
INSTANTIATE_TEST_SUITE_P(Pip, DistrunMistakeTest, ::testing::ValuesIn(kPipMistakes));

}  // namespace
}  // namespace distrun::cli
