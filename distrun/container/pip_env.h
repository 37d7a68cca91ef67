#pragma once

// `distrun wrap --pip`: a Python virtual environment inside the image at
// /opt/env, made with the image's own Python and filled by pip from PyPI
// or from wheelhouses (--find-links), as the LUMI container wrapper's
// pip-containerize does (docs/containers.md, "Python environments: --pip").
// pip runs inside the staged tree with bubblewrap; its cache, its
// temporary files and the requirement files stay outside the tree.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace distrun {
class Environment;
}  // namespace distrun

namespace distrun::container {

// Where the environment lives in every image distrun wraps, its programs
// and its Python.
inline constexpr const char* kPythonEnv = "/opt/env";
inline constexpr const char* kPythonEnvBin = "/opt/env/bin";
inline constexpr const char* kPythonEnvPython = "/opt/env/bin/python";

// The labels file Apptainer reads (`apptainer inspect --labels`) and
// `distrun wrap --list` prints, and distrun's keys in it.
inline constexpr const char* kLabelsFile = "/.singularity.d/labels.json";
inline constexpr const char* kPipFreezeLabel = "org.distrun.wrap.pip-freeze";
inline constexpr const char* kAptLabel = "org.distrun.wrap.apt";
inline constexpr const char* kPythonEnvLabel = "org.distrun.wrap.python-env";

// One --pip argument: a requirements file, a conda environment file, or a
// requirement as pip takes it on its command line (six==1.16.0, a URL).
struct PipSource {
  enum class Kind { kRequirement, kRequirementsFile, kCondaEnvFile };
  Kind kind = Kind::kRequirement;
  std::string text;  // the requirement, or the file's absolute path
};

// What --pip VALUE is: a file when it ends in .txt, .in, .yml or .yaml or
// has a '/' (and is not a URL); a conda file when it ends in .yml/.yaml.
PipSource classifyPipArgument(const std::string& value);

// The pip lines of a conda environment file's `dependencies:` `- pip:`
// list, in order. `python` and `pip` in the conda list are the image's own
// and taken; any other conda package is refused (DataError, 65, naming the
// file, the line and the package: conda channels are not reached). Relative
// files after -r/-c (--requirement, --constraint) become `folder`/FILE, the
// folder the environment file is seen at by pip. Throws DataError for a file
// with no pip list or a line it cannot read.
std::vector<std::string> condaEnvPipLines(std::string_view text, const std::string& file,
                                          const std::string& folder);

// The same of the conda environment file at `file`, read from the host
// (IoError, 74, when it cannot be).
std::vector<std::string> condaEnvFilePipLines(const std::string& file, const std::string& folder);

// The folder of the staging tree pip works in (beside the root, not in it),
// and where the inputs are bound there for pip to see.
struct PipPaths {
  std::string hostTmp;        // STAGING/pip: bound at /tmp in the sandbox
  std::string hostCache;      // the user's pip cache on the host: bound at kPipCacheInSandbox
  std::string hostCert = {};  // the CA bundle the host's pip trusts: bound at kPipCertInSandbox
};
inline constexpr const char* kPipCacheInSandbox = "/tmp/.pip-cache";
inline constexpr const char* kPipCertInSandbox = "/tmp/.pip-ca-bundle.pem";

// The CA bundle pip on this host trusts, as a file: $PIP_CERT, else
// $REQUESTS_CA_BUNDLE, else $SSL_CERT_FILE; "" when none names a file (pip
// inside then trusts its own bundle). A site whose proxy re-signs TLS
// names its bundle so; pip in the image must trust it too.
std::string hostPipCert(const Environment& env);

// The user's pip cache on the host, as pip itself chooses it:
// $PIP_CACHE_DIR, else $XDG_CACHE_HOME/pip, else $HOME/.cache/pip.
std::string hostPipCache(const Environment& env);

// A bind of a host path into the sandbox, read-only.
struct PipBind {
  std::string host;
  std::string inSandbox;
};

// The pip arguments of the sources and wheelhouses (-r FILE, the
// requirements, --find-links DIR, --no-index) with the folder of the N-th
// source's file bound at pipInputFolder(N) in the sandbox; `binds` gets the
// binds. The N-th source's conda pip lines are written by the caller to
// condaRequirementsFile(N) in pip's /tmp (PipPaths::hostTmp on the host).
std::vector<std::string> pipInstallArguments(const std::vector<PipSource>& sources,
                                             const std::vector<std::string>& findLinks,
                                             bool noIndex, std::vector<PipBind>& binds);
std::string pipInputFolder(size_t index);         // /tmp/inputs/N
std::string condaRequirementsFile(size_t index);  // conda-N.txt

// `bwrap` around `program`, which runs inside the tree at `root` as its `/`
// (writable), with /proc, /dev, the host's resolv.conf (pip reaches PyPI by
// name), PipPaths::hostTmp at /tmp, the cache and `binds`; a clean
// environment: PATH with the env's bin first, HOME=/tmp, PIP_CACHE_DIR (or
// PIP_NO_CACHE_DIR when `hostCache` is ""), PIP_CERT when `hostCert` is set, and the host's own
// PIP_* and proxy variables (`passed`, NAME=VALUE each).
std::vector<std::string> pipSandboxCommand(const std::string& root, const PipPaths& paths,
                                           const std::vector<PipBind>& binds,
                                           const std::vector<std::string>& passed,
                                           const std::vector<std::string>& program);

// The host variables pip inside should see, NAME=VALUE: PIP_* (but those
// naming host paths: PIP_CACHE_DIR, PIP_CERT, PIP_CONFIG_FILE,
// PIP_FIND_LINKS, PIP_TARGET, PIP_PREFIX, PIP_SRC) and the proxies.
std::vector<std::string> passedPipVariables(const Environment& env);

// The line of pip's output that says why it failed: "Could not find a
// version that satisfies ..." (a name or version PyPI lacks, or no wheel
// for the image's Python), else the first "ERROR: " line, with pip's note on
// versions ignored for another Python after it; "" when none.
std::string pipFailureReason(std::string_view output);

// The last line pip printed that says what it does now ("Collecting
// six==1.16.0", "Installing collected packages: six"), trimmed; "" when none.
std::string lastPipLine(std::string_view output);

// The labels file's text with `labels` set (merged into `existing`, the
// base image's file or ""; a file that is not a JSON object is replaced).
std::string mergedLabels(const std::string& existing,
                         const std::vector<std::pair<std::string, std::string>>& labels);

// `distrun wrap --list`'s text of a labels file: the Python environment's
// `pip freeze` (lines of name==version, a comment line first naming the
// image and the environment), and the Debian packages --apt asked for as a
// comment; valid as a requirements file. Throws DataError (65) naming
// `image` when the labels are not JSON or list nothing distrun wrote.
std::string describeLabels(const std::string& image, const std::string& labelsText);

}  // namespace distrun::container
