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

}  // namespace
}  // namespace distrun::cli
