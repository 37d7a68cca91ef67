#pragma once

// The steps of `distrun wrap`: a plan (a list of steps, pure data, so it is
// unit-tested) and its execution against a BuildTools. The build stages the
// image's root in a fresh folder under the staging folder, packs it with
// mksquashfs, wraps it into SIF, and renames IMAGE.partial-PID to IMAGE
// only at the end: an interrupted or failed build leaves neither a partial
// image nor the staging folder (docs/containers.md, "distrun wrap").
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "distrun/common/environment.h"
#include "distrun/container/build_progress.h"
#include "distrun/container/build_tools.h"
#include "distrun/container/sif.h"
#include "distrun/container/wrap_options.h"

namespace distrun::container {

// Where one build puts its files.
struct BuildPaths {
  std::string staging;   // the build's own folder under the staging folder
  std::string root;      // STAGING/root: the image's root file system
  std::string squashfs;  // what mksquashfs writes: STAGING/image.squashfs for
                         // SIF, the partial image itself for --format squashfs
  std::string partial;   // IMAGE.partial-PID, beside IMAGE
  std::string pip;       // STAGING/pip: /tmp of pip's sandbox (--pip), outside the root
};

BuildPaths buildPathsFor(const WrapOptions& options, const std::string& staging, long pid);

// What the plan needs from the host, read once (hostBuildInputs).
struct BuildInputs {
  int processors = 1;                // mksquashfs -processors
  std::vector<std::string> mirrors;  // mmdebstrap's MIRROR arguments
  uint64_t baseOffset = 0;           // where --base's SquashFS starts in its file
  std::string arch = "amd64";        // the SIF partition's (Go's GOARCH names)
  // Not root: files are packed as root's (mksquashfs -all-root), as an
  // image built with `apptainer build --fakeroot` has them, rather than as
  // the user who happened to build it.
  bool allRoot = false;
  // --pip: the host's pip cache bound into the sandbox ("" for none), and
  // the host's PIP_* and proxy variables pip sees (pip_env.h).
  std::string pipCache = {};
  std::string pipCert = {};  // hostPipCert: the CA bundle pip trusts here
  std::vector<std::string> pipVariables = {};
};

// The mirrors (--mirror, else the host's apt sources naming the suite),
// the usable CPUs, --base's offset (openImage), the host's architecture,
// whether distrun runs as root, and for --pip the pip cache (made when
// missing; none when it cannot be) and the variables pip sees, from `env`.
BuildInputs hostBuildInputs(const WrapOptions& options, const Environment& env);

// Go's GOARCH name for a `uname -m` machine ("x86_64" is "amd64",
// "aarch64" "arm64"); the machine itself when unknown.
std::string goArchFor(const std::string& machine);

enum class StepKind {
  kUnpackBase,   // unsquashfs the --base image into the root
  kDebootstrap,  // mmdebstrap the --apt packages into the root
  kCopyDir,      // cp -a one --dir tree to its DEST
  kVenv,         // python3 -m venv /opt/env, unless the image has it (--pip)
  kPipInstall,   // pip install into /opt/env (--pip)
  kLayout,       // makeImageLayout
  kEnvironment,  // appendEnvironment (--env, --path)
  kLabels,       // /.singularity.d/labels.json: --apt's packages, pip freeze
  kSquash,       // mksquashfs the root
  kSif,          // writeSif around the SquashFS
  kPublish,      // rename the partial image to IMAGE
  kWrappers,     // --wrappers
};

struct BuildStep {
  StepKind kind = StepKind::kLayout;
  std::string name;               // in progress lines and the report ("mmdebstrap")
  std::vector<std::string> argv;  // kUnpackBase, kDebootstrap, kSquash
  DirSource dir;                  // kCopyDir
  std::string text;               // kEnvironment: the lines to append
};

// The steps, in order: base, then packages, then each --dir in the order
// given, then the Python environment and pip, the layout, the environment,
// the labels, mksquashfs, SIF, the rename and the wrappers. Only the steps the options ask for.
std::vector<BuildStep> planBuild(const WrapOptions& options, const BuildPaths& paths,
                                 const BuildInputs& inputs);

// `cp -a -T SRC HOSTDEST`: copies SRC's contents to HOSTDEST (created,
// or merged into when it exists), symlinks kept as symlinks, owners,
// modes and times kept.
std::vector<std::string> copyCommand(const std::string& source, const std::string& hostDest);

// Everything a build touches besides the staging folder and the image.
struct BuildWorld {
  BuildTools& runner;
  std::function<int()> interrupted = {};  // the signal that stops the build; 0: none
  std::ostream& err;                      // progress (report: the caller prints it)
  bool terminal = false;                  // `err` is a terminal
  std::function<double()> now = {};       // seconds, monotonic
  std::string distrun = {};               // distrun's absolute path, baked into wrappers
  std::function<void(const std::string&, const std::string&, const SifOptions&)> writeSif =
      container::writeSif;
  long pid = 0;  // names the partial image; 0: this process's
};

// Builds the image `options` ask for and returns what it did. Before
// returning or throwing, removes the staging folder; on any error or
// interrupt also the partial image (IMAGE itself is untouched unless the
// build completed). Throws BuildInterrupted for SIGINT/SIGTERM, ConfigError
// (78) when mmdebstrap fails (a package, the suite or a mirror), DataError
// (65) when the image has no Python for --pip, venv fails or pip does (a
// requirement not found, no wheel for the image's Python), IoError
// (74) when unsquashfs, cp, mksquashfs or a file operation fails, each
// naming the tool and its last line of output; the tool's last lines go to
// `err` first.
BuildReport wrapImage(const WrapOptions& options, const BuildInputs& inputs, BuildWorld& world);

}  // namespace distrun::container
