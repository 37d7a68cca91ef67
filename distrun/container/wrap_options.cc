#include "distrun/container/wrap_options.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/writable_file.h"
#include "distrun/container/internal/paths.h"

namespace distrun::container {

namespace {

namespace fs = std::filesystem;

std::string absoluteNormal(const std::string& path) {
  std::string normal = fs::absolute(path).lexically_normal().string();
  if (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

std::string normalInImage(const std::string& path) {
  std::string normal = fs::path(path).lexically_normal().string();
  if (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

void requireAbsolute(const std::string& flag, const std::string& value, const std::string& what) {
  if (value.empty() || value.front() != '/') {
    throw UsageError(fmt::format("{} {}: {} must be an absolute path inside the image (/opt/env)",
                                 flag, value, what));
  }
}

DirSource parseDir(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw UsageError(
        fmt::format("--dir {}: expected SRC:DEST, a host folder and where it goes in the image "
                    "(--dir ./venv:/opt/env)",
                    text));
  }
  const std::string dest = text.substr(colon + 1);
  if (dest.front() != '/') {
    throw UsageError(fmt::format(
        "--dir {}: DEST {} must be an absolute path inside the image (/opt/env)", text, dest));
  }
  return {absoluteNormal(text.substr(0, colon)), normalInImage(dest)};
}

bool isVariableName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::pair<std::string, std::string> parseEnv(const std::string& text) {
  const size_t eq = text.find('=');
  const std::string name = text.substr(0, eq);
  if (eq == std::string::npos || !isVariableName(name)) {
    throw UsageError(
        fmt::format("--env {}: expected NAME=VALUE with NAME made of letters, digits and _ (--env "
                    "OMP_NUM_THREADS=8)",
                    text));
  }
  return {name, text.substr(eq + 1)};
}

std::vector<std::string> parsePackages(const std::vector<std::string>& lists) {
  std::vector<std::string> packages;
  for (const std::string& list : lists) {
    for (const std::string& part : split(list, ',')) {
      const std::string package(trim(part));
      if (package.empty() || package.front() == '-') {
        throw UsageError(
            fmt::format("--apt {}: expected Debian package names separated by commas (--apt "
                        "python3-torch,python3-numpy)",
                        list));
      }
      packages.push_back(package);
    }
  }
  return packages;
}

ImageFormat parseFormat(const std::string& text) {
  if (text == "sif") return ImageFormat::kSif;
  if (text == "squashfs") return ImageFormat::kSquashfs;
  throw UsageError(fmt::format("--format {}: expected sif or squashfs", text));
}

// --compression NAME[:LEVEL] as mksquashfs's flags. zstd's default level
// is 3, not mksquashfs's 15: the Python stack of python3-torch packs in
// 4.6 s instead of 108 s for 15% more bytes, and unpacks as fast (zstd
// decompresses at one speed whatever the level).
std::vector<std::string> compressionFlags(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  const std::string level = colon == std::string::npos ? "" : text.substr(colon + 1);
  const std::map<std::string, std::pair<int, int>> levels = {
      {"zstd", {1, 22}}, {"gzip", {1, 9}}, {"xz", {0, 0}}, {"lz4", {0, 0}}, {"none", {0, 0}}};
  auto known = levels.find(name);
  if (known == levels.end()) {
    throw UsageError(fmt::format(
        "--compression {}: expected zstd[:LEVEL], gzip[:LEVEL], xz, lz4 or none", text));
  }
  if (name == "none") return {"-noI", "-noD", "-noF", "-noX"};
  std::vector<std::string> flags = {"-comp", name};
  std::string chosen = level.empty() && name == "zstd" ? "3" : level;
  if (chosen.empty()) return flags;
  auto [low, high] = known->second;
  const bool digits = !chosen.empty() && chosen.size() < 3 &&
                      chosen.find_first_not_of("0123456789") == std::string::npos;
  const int value = digits ? std::stoi(chosen) : -1;
  if (low == high || value < low || value > high) {
    throw UsageError(fmt::format(
        "--compression {}: {} takes {}", text, name,
        low == high ? std::string("no level") : fmt::format("a level from {} to {}", low, high)));
  }
  flags.insert(flags.end(), {"-Xcompression-level", chosen});
  return flags;
}

void checkVariant(const std::string& variant) {
  const auto& known = debootstrapVariants();
  if (std::find(known.begin(), known.end(), variant) != known.end()) return;
  throw UsageError(fmt::format("--variant {}: expected one of {} (mmdebstrap's variants)", variant,
                               join(known, ", ")));
}

void checkSources(const WrapArguments& args) {
  if (args.apt.empty() && args.dirs.empty() && args.base.empty()) {
    throw UsageError(
        "wrap: nothing to put in the image: give --apt PKG[,PKG...], --dir SRC:DEST or --base "
        "IMAGE (see 'distrun wrap --help')");
  }
  if (!args.apt.empty() && !args.base.empty()) {
    throw UsageError(fmt::format(
        "--apt with --base {}: distrun wraps packages into a new Debian system only, not into "
        "an existing image: list every package in one --apt build, or add your files to the "
        "base with --dir",
        args.base));
  }
  if (!args.pip.empty() && args.apt.empty() && args.base.empty()) {
    throw UsageError(
        fmt::format("--pip {}: the environment is made with the image's own Python: add --apt "
                    "python3,python3-venv, or --base an image that has Python",
                    args.pip.front()));
  }
  if (args.pip.empty() && (!args.findLinks.empty() || args.noIndex)) {
    throw UsageError(
        fmt::format("{}: is where --pip finds packages: give --pip too",
                    args.noIndex ? "--no-index" : "--find-links " + args.findLinks.front()));
  }
  if (args.output.empty()) {
    throw UsageError("wrap: -o IMAGE is required: the image file to write (-o env.sif)");
  }
}

std::string suiteFor(const WrapArguments& args, const std::string& hostSuite) {
  if (args.apt.empty()) return args.suite;
  if (!args.suite.empty()) return args.suite;
  if (hostSuite.empty()) {
    throw UsageError(
        "--apt: this host's /etc/os-release names no Debian release (VERSION_CODENAME): give "
        "one with --suite (--suite bookworm)");
  }
  return hostSuite;
}

bool onPath(const std::string& program, const Environment& env) {
  for (const std::string& dir : split(env.getOr("PATH", "/usr/bin:/bin"), ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

void checkDirSource(const DirSource& dir) {
  const std::string flag = fmt::format("--dir {}:{}", dir.source, dir.destination);
  std::error_code ec;
  const fs::file_status status = fs::status(dir.source, ec);
  if (status.type() == fs::file_type::not_found) {
    throw Error(ExitCode::kNoInput,
                fmt::format("{}: {} does not exist: give a folder on this host", flag, dir.source));
  }
  if (status.type() != fs::file_type::directory) {
    throw UsageError(
        fmt::format("{}: {} is not a folder: --dir copies a folder's contents to "
                    "DEST (for one file, give the folder that holds it)",
                    flag, dir.source));
  }
}

void checkExists(const std::string& flag, const std::string& path, bool folder) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) {
    throw Error(ExitCode::kNoInput, fmt::format("{} {}: does not exist: give {} on this host", flag,
                                                path, folder ? "a folder" : "a file"));
  }
  if ((status.type() == fs::file_type::directory) != folder) {
    throw UsageError(fmt::format("{} {}: is not {}", flag, path,
                                 folder ? "a folder (a wheelhouse of .whl files)"
                                        : "a file (a requirements.txt or a conda env.yml)"));
  }
}

void checkPipInputs(const WrapOptions& o) {
  for (const PipSource& source : o.pip) {
    if (source.kind == PipSource::Kind::kRequirement) continue;
    checkExists("--pip", source.text, false);
    if (source.kind != PipSource::Kind::kCondaEnvFile) continue;
    condaEnvFilePipLines(source.text, ".");  // its mistakes, before anything starts
  }
  for (const std::string& links : o.findLinks) {
    if (links.find("://") == std::string::npos) checkExists("--find-links", links, true);
  }
}

void checkOutput(const WrapOptions& o) {
  checkFileWritable(o.output, "-o", 0);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(o.output, ec)) && !o.force) {
    throw UsageError(fmt::format(
        "-o {}: the file exists: add --force to replace it, or choose another name", o.output));
  }
}

bool writableFolder(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && ::access(path.c_str(), W_OK | X_OK) == 0;
}

// PREFIX/bin will be created: the nearest of it, PREFIX and PREFIX's
// folder that exists must be a folder distrun can write in.
void checkWrappers(const std::string& prefix) {
  std::error_code ec;
  for (const fs::path& p : {fs::path(prefix) / "bin", fs::path(prefix)}) {
    const fs::file_status status = fs::status(p, ec);
    if (status.type() == fs::file_type::not_found) continue;
    if (status.type() == fs::file_type::directory && writableFolder(p.string())) return;
    throw IoError(
        fmt::format("--wrappers {}: {} is not a folder distrun can write in: choose "
                    "another prefix",
                    prefix, p.string()));
  }
  const std::string parent = fs::path(prefix).parent_path().string();
  if (!writableFolder(parent)) {
    throw IoError(
        fmt::format("--wrappers {}: the folder {} does not exist or cannot be written: "
                    "create it, or choose another prefix",
                    prefix, parent));
  }
}

std::string stagingWhat(const WrapOptions& o) {
  return fmt::format("staging folder {} (--tmpdir, else $TMPDIR, else /tmp)", o.tmpdir);
}

void checkStagingFolder(const WrapOptions& o) {
  const std::string what = stagingWhat(o);
  if (!writableFolder(o.tmpdir)) {
    throw IoError(
        fmt::format("{}: not a folder distrun can write in: create it, or choose "
                    "another with --tmpdir",
                    what));
  }
  for (const DirSource& dir : o.dirs) {
    if (!detail::atOrUnder(o.tmpdir, dir.source)) continue;
    throw UsageError(
        fmt::format("{}: it is inside --dir {}:{}, which would copy the image "
                    "into itself: choose another with --tmpdir",
                    what, dir.source, dir.destination));
  }
}

void checkTools(const WrapOptions& o, const Environment& env) {
  for (const auto& [program, package] : toolsNeeded(o)) {
    if (onPath(program, env)) continue;
    throw SystemError(ExitCode::kNotFound,
                      fmt::format("wrap: {} not found on PATH: install the Debian package {} "
                                  "(scripts/install-deps does)",
                                  program, package));
  }
}

}  // namespace

const std::vector<std::string>& debootstrapVariants() {
  static const std::vector<std::string> variants = {
      "extract", "custom", "essential", "apt",         "required",
      "minbase", "buildd", "important", "debootstrap", "standard"};
  return variants;
}

std::string stagingParent(const std::string& tmpdir, const Environment& env) {
  if (!tmpdir.empty()) return absoluteNormal(tmpdir);
  std::string fromEnv = env.getOr("TMPDIR", "");
  return fromEnv.empty() ? "/tmp" : absoluteNormal(fromEnv);
}

WrapOptions parseWrapArguments(const WrapArguments& args, const std::string& hostSuite,
                               const Environment& env) {
  checkSources(args);
  WrapOptions o;
  o.output = absoluteNormal(args.output);
  o.format = parseFormat(args.format);
  o.compression = compressionFlags(args.compression);
  o.packages = parsePackages(args.apt);
  o.suite = suiteFor(args, hostSuite);
  checkVariant(args.variant);
  o.variant = args.variant;
  o.mirrors = args.mirrors;
  for (const std::string& dir : args.dirs) o.dirs.push_back(parseDir(dir));
  if (!args.base.empty()) o.base = absoluteNormal(args.base);
  for (const std::string& p : args.pip) {
    if (trim(p).empty())
      throw UsageError("--pip '': expected a requirement (six==1.16.0) or a file");
    o.pip.push_back(classifyPipArgument(p));
  }
  for (const std::string& links : args.findLinks) {
    o.findLinks.push_back(links.find("://") == std::string::npos ? absoluteNormal(links) : links);
  }
  o.noIndex = args.noIndex;
  for (const std::string& e : args.env) o.env.push_back(parseEnv(e));
  for (const std::string& p : args.paths) {
    requireAbsolute("--path", p, "DIR");
    o.paths.push_back(normalInImage(p));
  }
  if (!args.wrappers.empty()) o.wrappers = absoluteNormal(args.wrappers);
  for (const std::string& p : args.wrapPaths) {
    requireAbsolute("--wrap-path", p, "DIR");
    o.wrapPaths.push_back(normalInImage(p));
  }
  o.tmpdir = stagingParent(args.tmpdir, env);
  o.force = args.force;
  o.quiet = args.quiet;
  return o;
}

std::vector<std::pair<std::string, std::string>> toolsNeeded(const WrapOptions& options) {
  std::vector<std::pair<std::string, std::string>> tools;
  if (!options.packages.empty()) tools.emplace_back("mmdebstrap", "mmdebstrap");
  if (!options.base.empty()) tools.emplace_back("unsquashfs", "squashfs-tools");
  if (!options.dirs.empty()) tools.emplace_back("cp", "coreutils");
  if (!options.pip.empty()) tools.emplace_back("bwrap", "bubblewrap");
  tools.emplace_back("mksquashfs", "squashfs-tools");
  return tools;
}

void checkWrapInputs(const WrapOptions& options, const Environment& env) {
  for (const DirSource& dir : options.dirs) checkDirSource(dir);
  checkPipInputs(options);
  checkOutput(options);
  if (!options.base.empty()) openImage(options.base);
  if (!options.wrappers.empty()) checkWrappers(options.wrappers);
  checkStagingFolder(options);
  checkTools(options, env);
}

void checkAptPrivileges(const WrapOptions& options, unsigned uid) {
  if (options.packages.empty() || uid == 0) return;
  throw UsageError(fmt::format(
      "--apt: mmdebstrap makes a Debian tree with the right owners only as root (this is uid "
      "{}): run distrun wrap --apt as root, or build the packages' image once as root and add "
      "your files with --base IMAGE --dir SRC:DEST",
      uid));
}

void checkStagingSpace(const WrapOptions& options, uint64_t stagedBytes) {
  struct statvfs info {};
  if (::statvfs(options.tmpdir.c_str(), &info) != 0) return;  // unknown: the copy will tell
  const uint64_t available = static_cast<uint64_t>(info.f_bavail) * info.f_frsize;
  if (available >= stagedBytes) return;
  throw IoError(
      fmt::format("{}: has {} free, staging the image's files needs at least {}: "
                  "free some space, or choose another folder with --tmpdir",
                  stagingWhat(options), mebibytes(available), mebibytes(stagedBytes)));
}

}  // namespace distrun::container
