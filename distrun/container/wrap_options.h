#pragma once

// What `distrun wrap` is asked to build (docs/containers.md, "distrun
// wrap"): the command line as given (WrapArguments), the same checked and
// normalised (WrapOptions), and the checks that refuse every mistake before
// anything starts.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "distrun/container/image_file.h"
#include "distrun/container/pip_env.h"

namespace distrun {
class Environment;
}  // namespace distrun

namespace distrun::container {

// The flags of `distrun wrap`, as strings, before any check.
struct WrapArguments {
  std::string output = {};                  // -o IMAGE
  std::string format = "sif";               // --format sif|squashfs
  std::string compression = "zstd";         // --compression NAME[:LEVEL]
  std::vector<std::string> apt = {};        // --apt PKG[,PKG...], repeatable
  std::string suite = {};                   // --suite; "": the host's release
  std::string variant = "essential";        // --variant (mmdebstrap's)
  std::vector<std::string> mirrors = {};    // --mirror; none: the host's apt sources
  std::vector<std::string> dirs = {};       // --dir SRC:DEST, repeatable
  std::string base = {};                    // --base IMAGE
  std::vector<std::string> pip = {};        // --pip REQUIREMENT|FILE, repeatable
  std::vector<std::string> findLinks = {};  // --find-links DIR|URL, repeatable
  bool noIndex = false;                     // --no-index: wheelhouses only
  std::vector<std::string> env = {};        // --env NAME=VALUE, repeatable
  std::vector<std::string> paths = {};      // --path DIR, repeatable
  std::string wrappers = {};                // --wrappers PREFIX
  std::vector<std::string> wrapPaths = {};  // --wrap-path DIR, repeatable
  std::string tmpdir = {};                  // --tmpdir; "": $TMPDIR, else /tmp
  bool force = false;                       // --force: replace an existing IMAGE
  bool quiet = false;                       // -q
};

// A host folder copied into the image (--dir SRC:DEST).
struct DirSource {
  std::string source;       // absolute, normalised
  std::string destination;  // absolute path inside the image, normalised
};

// The checked request. Paths are absolute and normalised.
struct WrapOptions {
  std::string output;
  ImageFormat format = ImageFormat::kSif;
  // mksquashfs's compression flags for --compression ("-comp zstd
  // -Xcompression-level 3" for the default).
  std::vector<std::string> compression = {"-comp", "zstd", "-Xcompression-level", "3"};
  std::vector<std::string> packages;  // every --apt package, in order
  std::string suite;                  // set whenever packages is not empty
  std::string variant = "essential";
  std::vector<std::string> mirrors;  // passed to mmdebstrap as they are
  std::vector<DirSource> dirs;
  std::string base;                    // "" for none
  std::vector<PipSource> pip;          // empty: no Python environment
  std::vector<std::string> findLinks;  // absolute folders, or URLs as given
  bool noIndex = false;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> paths;
  std::string wrappers;                // "" for none
  std::vector<std::string> wrapPaths;  // empty: the defaults (wrappers.h)
  std::string tmpdir;
  bool force = false;
  bool quiet = false;
};

// The variants mmdebstrap knows (--variant).
const std::vector<std::string>& debootstrapVariants();

// Checks the arguments' syntax and makes paths absolute (relative to the
// working directory). `hostSuite` is the host's release codename ("" when
// unknown), the default --suite. Reads nothing from the file system.
// Throws UsageError (64) naming the flag: no source at all, --base with
// --apt, a DEST, --path or --wrap-path that is not absolute, an --env
// without NAME=, an unknown --format or --variant, an empty package name,
// --apt without a suite to take, --pip without --apt or --base (no
// Python to make the environment with), --find-links or --no-index
// without --pip.
WrapOptions parseWrapArguments(const WrapArguments& args, const std::string& hostSuite,
                               const Environment& env);

// The folder that holds the staging tree: --tmpdir, else $TMPDIR, else /tmp.
std::string stagingParent(const std::string& tmpdir, const Environment& env);

// Checks what the build will read and write, before anything starts:
// each --dir SRC is a folder (ExitCode::kNoInput, 66, when missing), the
// output's folder exists and takes a file (IoError, 74), the output does not
// exist unless --force (UsageError), each --pip file and --find-links
// folder exists (kNoInput, 66), --base opens as an image (openImage's
// ImageError), --wrappers can be created (IoError), the staging folder is a
// writable folder (IoError) not inside a --dir SRC (UsageError), and the
// tools the build runs are on `env`'s PATH (kNotFound, 127, naming the
// Debian package).
void checkWrapInputs(const WrapOptions& options, const Environment& env);

// --apt as a user other than root is refused (UsageError): mmdebstrap then
// builds in a user namespace, and a directory it leaves has the wrong
// owners (files the user can neither pack nor remove) and no device files.
// `uid` is the effective user's.
void checkAptPrivileges(const WrapOptions& options, unsigned uid);

// Checks that the staging folder has `stagedBytes` free (the --dir trees
// and the --base image's files): IoError naming both amounts otherwise.
void checkStagingSpace(const WrapOptions& options, uint64_t stagedBytes);

// The tools a build with `options` runs (mmdebstrap, unsquashfs, cp,
// mksquashfs), each with its Debian package: {program, package}.
std::vector<std::pair<std::string, std::string>> toolsNeeded(const WrapOptions& options);

}  // namespace distrun::container
