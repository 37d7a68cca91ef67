// `distrun wrap -o IMAGE [SOURCES] [OPTIONS]`: builds a container image
// (SquashFS in SIF) from Debian packages, host folders and an existing
// image, with wrapper scripts (docs/containers.md, "distrun wrap").
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "distrun/cli/commands.h"
#include "distrun/cli/flag_check.h"
#include "distrun/common/error.h"
#include "distrun/common/tool_process.h"
#include "distrun/container/debian_sources.h"
#include "distrun/container/image_build.h"
#include "distrun/container/staging_tree.h"
#include "distrun/container/wrap_options.h"
#include "distrun/launch/failure_report.h"

namespace distrun::cli {
namespace {

using container::WrapArguments;
using container::WrapOptions;

double steadySeconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// What staging copies before any package: the --dir trees and the files of
// the --base image (from its listing; nothing is unpacked to count them).
uint64_t stagedBytesFor(const WrapOptions& o) {
  uint64_t bytes = 0;
  for (const container::DirSource& dir : o.dirs) bytes += container::measureTree(dir.source).bytes;
  if (!o.base.empty()) {
    const uint64_t offset = container::openImage(o.base).rootOffset;
    ToolResult listing = runTool({"unsquashfs", "-lln", "-o", std::to_string(offset), o.base});
    bytes += container::listedFileBytes(listing.out);
  }
  return bytes;
}

int buildForReal(const WrapOptions& o, CliContext& ctx) {
  const container::BuildInputs inputs = container::hostBuildInputs(o, ctx.env);
  container::InterruptCatcher catcher;
  auto interrupted = [&catcher] { return catcher.caught(); };
  container::ProcessBuildTools runner(interrupted);
  container::BuildWorld world{
      .runner = runner,
      .interrupted = interrupted,
      .err = ctx.err,
      .terminal = &ctx.err == &std::cerr && ::isatty(STDERR_FILENO) != 0,
      .now = steadySeconds,
      .distrun = ctx.toolDir + "/distrun",
  };
  try {
    container::BuildReport report = container::wrapImage(o, inputs, world);
    if (!o.quiet) ctx.err << container::formatReport(report);
    return 0;
  } catch (const container::BuildInterrupted& e) {
    ctx.err << fmt::format(
        "distrun: wrap: interrupted by {}: stopped the build and removed the partial image and "
        "the staging folder; {} was not written\n",
        launch::signalName(e.signal()), o.output);
    return 128 + e.signal();
  }
}

// `distrun wrap --list IMAGE`: what the image's labels say was installed.
int listImage(const std::string& image, CliContext& ctx) {
  const uint64_t offset = container::openImage(image).rootOffset;
  ToolResult labels =
      runTool({"unsquashfs", "-o", std::to_string(offset), "-cat", image, container::kLabelsFile});
  if (labels.exitCode == 127) {
    throw SystemError(ExitCode::kNotFound,
                      "wrap --list: unsquashfs not found on PATH: install the Debian package "
                      "squashfs-tools (scripts/install-deps does)");
  }
  if (labels.exitCode != 0) {
    throw DataError(fmt::format(
        "{}: has no {}: it was not built by distrun wrap (or by a tool that writes labels)", image,
        container::kLabelsFile));
  }
  ctx.out << container::describeLabels(image, labels.out);
  return 0;
}

int runWrap(const WrapArguments& args, CliContext& ctx) {
  WrapOptions options = container::parseWrapArguments(args, container::hostCodename(), ctx.env);
  container::checkAptPrivileges(options, ::geteuid());
  container::checkWrapInputs(options, ctx.env);
  container::checkStagingSpace(options, stagedBytesFor(options));
  return ctx.wrapImage ? ctx.wrapImage(options) : buildForReal(options, ctx);
}

void addSourceFlags(CLI::App* cmd, WrapArguments& a) {
  cmd->add_option("--apt", a.apt,
                  "Debian packages for the base system, comma-separated (repeatable); built "
                  "with mmdebstrap")
      ->allow_extra_args(false);
  cmd->add_option("--suite", a.suite, "Debian release for --apt (default: this host's)");
  cmd->add_option("--variant", a.variant,
                  "mmdebstrap variant for --apt: essential (default), apt, minbase, extract, ...");
  cmd->add_option("--mirror", a.mirrors,
                  "apt source for --apt, as mmdebstrap takes it (repeatable; default: this "
                  "host's apt sources for the suite)")
      ->allow_extra_args(false);
  cmd->add_option("--dir", a.dirs,
                  "SRC:DEST: copy the host folder SRC to DEST in the image, symlinks kept "
                  "(repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--base", a.base, "an existing image (SIF or SquashFS) to start from");
  cmd->add_option("--pip", a.pip,
                  "REQUIREMENT (six==1.16.0), requirements.txt or a conda env.yml's pip: list, "
                  "installed by pip into the image's Python environment /opt/env (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--find-links", a.findLinks,
                  "a wheelhouse folder (or URL) pip also takes packages from (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--no-index", a.noIndex, "pip reaches no package index: --find-links only");
}

void addImageFlags(CLI::App* cmd, WrapArguments& a) {
  cmd->add_option("-o,--output", a.output, "the image file to write");
  cmd->add_option("--format", a.format, "sif (default) or squashfs");
  cmd->add_option("--compression", a.compression,
                  "zstd[:LEVEL] (default zstd:3), gzip[:LEVEL], xz, lz4 or none");
  cmd->add_option("--env", a.env, "NAME=VALUE set when the image starts (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--path", a.paths, "DIR in the image put in front of PATH (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--wrappers", a.wrappers,
                  "write PREFIX/bin/NAME running each program of the image's bin folders");
  cmd->add_option("--wrap-path", a.wrapPaths,
                  "folder (or program) in the image to wrap (repeatable; default: each --dir "
                  "DEST's bin/ and /usr/bin/python3)")
      ->allow_extra_args(false);
  cmd->add_option("--tmpdir", a.tmpdir, "where to stage the image (default: $TMPDIR, else /tmp)");
  cmd->add_flag("--force", a.force, "replace IMAGE when it exists");
  cmd->add_flag("-q,--quiet", a.quiet, "print errors only");
}

}  // namespace

Action addWrapCommand(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<WrapArguments>();
  auto list = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "wrap",
      "Build a container image (SquashFS in SIF, as Apptainer and Singularity run) from Debian "
      "packages, host folders and an existing image, with wrapper scripts "
      "(docs/containers.md)");
  addImageFlags(cmd, *args);
  addSourceFlags(cmd, *args);
  cmd->add_option("--list", *list,
                  "print what IMAGE's labels say distrun wrap installed (pip freeze, --apt)");
  cmd->allow_extras();  // what is left must be nothing
  return [args, list, cmd, &ctx] {
    std::vector<std::string> rest = argumentsWithoutFlags(*cmd);
    if (!rest.empty()) {
      throw UsageError(fmt::format(
          "wrap: unexpected argument '{}': sources are flags (--apt, --dir, --base) and the "
          "image is -o IMAGE",
          rest.front()));
    }
    if (!list->empty()) {
      if (cmd->count_all() > 2) {  // the command itself and --list
        throw UsageError(fmt::format(
            "wrap --list {}: takes no other flag: it reads an image, it builds none", *list));
      }
      return listImage(*list, ctx);
    }
    return runWrap(*args, ctx);
  };
}

}  // namespace distrun::cli
