#include "distrun/container/image_build.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <ostream>

#include <fmt/format.h>

#include "distrun/common/atomic_file.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"
#include "distrun/common/unique_fd.h"
#include "distrun/container/debian_sources.h"
#include "distrun/container/pip_env.h"
#include "distrun/container/staging_tree.h"
#include "distrun/container/wrappers.h"

namespace distrun::container {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> debootstrapCommand(const WrapOptions& o, const BuildPaths& paths,
                                            const BuildInputs& inputs) {
  std::vector<std::string> argv = {"mmdebstrap", "--variant=" + o.variant,
                                   "--include=" + join(o.packages, ","), o.suite, paths.root};
  argv.insert(argv.end(), inputs.mirrors.begin(), inputs.mirrors.end());
  return argv;
}

std::vector<std::string> unpackCommand(const WrapOptions& o, const BuildPaths& paths,
                                       const BuildInputs& inputs) {
  return {"unsquashfs", "-o", std::to_string(inputs.baseOffset), "-f", "-d", paths.root, o.base};
}

BuildStep toolStep(StepKind kind, const std::string& name, std::vector<std::string> argv) {
  BuildStep step;
  step.kind = kind;
  step.name = name;
  step.argv = std::move(argv);
  return step;
}

std::vector<std::string> squashCommand(const WrapOptions& o, const BuildPaths& paths,
                                       const BuildInputs& inputs) {
  std::vector<std::string> argv = {"mksquashfs", paths.root, paths.squashfs};
  argv.insert(argv.end(), o.compression.begin(), o.compression.end());
  argv.insert(argv.end(),
              {"-noappend", "-processors", std::to_string(inputs.processors), "-progress"});
  if (inputs.allRoot) argv.push_back("-all-root");
  return argv;
}

std::vector<std::string> venvCommand() { return {"/usr/bin/python3", "-m", "venv", kPythonEnv}; }

std::vector<std::string> envPython() { return {kPythonEnvPython, "-m", "pip"}; }

std::vector<std::string> pipInstallCommand(const WrapOptions& o, const BuildPaths& paths,
                                           const BuildInputs& inputs) {
  std::vector<PipBind> binds;
  std::vector<std::string> program = envPython();
  program.insert(program.end(),
                 {"install", "--no-input", "--disable-pip-version-check", "--progress-bar", "off"});
  std::vector<std::string> args = pipInstallArguments(o.pip, o.findLinks, o.noIndex, binds);
  program.insert(program.end(), args.begin(), args.end());
  return pipSandboxCommand(paths.root, {paths.pip, inputs.pipCache, inputs.pipCert}, binds,
                           inputs.pipVariables, program);
}

std::vector<std::string> pipFreezeCommand(const BuildPaths& paths, const BuildInputs& inputs) {
  std::vector<std::string> program = envPython();
  program.insert(program.end(), {"freeze", "--disable-pip-version-check"});
  return pipSandboxCommand(paths.root, {paths.pip, ""}, {}, inputs.pipVariables, program);
}

// unsquashfs's exit 2: files it could not recreate (device nodes as a
// user, xattrs the staging file system lacks); it went on with the rest.
constexpr int kUnsquashfsNonFatal = 2;

// The line of a tool's output that says why it failed: mmdebstrap's first
// "E: " line (the later ones repeat apt's command line), else the first
// that says something failed (unsquashfs and mksquashfs end with a
// summary), else the last.
std::string reasonIn(const std::string& tail) {
  std::vector<std::string> lines = split(tail, '\n');
  for (const std::string& line : lines) {
    if (line.rfind("E: ", 0) == 0) return line;
  }
  for (const std::string& line : lines) {
    for (const char* word : {"could not", "cannot", "failed", "FATAL", "rror"}) {
      if (line.find(word) != std::string::npos) return line;
    }
  }
  return lines.empty() ? "" : lines.back();
}

void fsyncPath(const std::string& path, int flags) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd || ::fsync(fd.get()) != 0) {
    throw IoError(fmt::format("image {}: cannot sync it to disk: {}", path, std::strerror(errno)));
  }
}

uint64_t fileSize(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

// One build: runs the steps, shows progress, keeps what the report needs.
class Build {
 public:
  Build(const WrapOptions& options, const BuildInputs& inputs, BuildWorld& world, BuildPaths paths)
      : o_(options),
        inputs_(inputs),
        world_(world),
        paths_(std::move(paths)),
        progress_(world.err, world.terminal, options.quiet, world.now) {}

  BuildReport run(const std::vector<BuildStep>& steps) {
    const double start = world_.now();
    for (const BuildStep& step : steps) {
      // Once the image is in place the build finishes: nothing to undo.
      if (step.kind != StepKind::kWrappers) checkInterrupt();
      const double stepStart = world_.now();
      runStep(step);
      if (!step.name.empty()) addTime(step.name, world_.now() - stepStart);
    }
    progress_.clear();
    report_.seconds = world_.now() - start;
    return report_;
  }

  void clearProgress() { progress_.clear(); }

 private:
  void checkInterrupt() {
    if (int signal = world_.interrupted()) throw BuildInterrupted(signal);
  }

  void addTime(const std::string& name, double seconds) {
    for (auto& [step, total] : report_.steps) {
      if (step == name) {
        total += seconds;
        return;
      }
    }
    report_.steps.emplace_back(name, seconds);
  }

  void runStep(const BuildStep& step) {
    switch (step.kind) {
      case StepKind::kUnpackBase:
        return runBarTool(step);
      case StepKind::kDebootstrap:
        return debootstrap(step);
      case StepKind::kCopyDir:
        return copyDir(step);
      case StepKind::kVenv:
        return pythonEnv(step);
      case StepKind::kPipInstall:
        return pipInstall(step);
      case StepKind::kLabels:
        return labels(step);
      case StepKind::kLayout:
        return makeImageLayout(paths_.root);
      case StepKind::kEnvironment:
        return appendEnvironment(paths_.root, step.text);
      case StepKind::kSquash:
        return squash(step);
      case StepKind::kSif:
        return wrapSif();
      case StepKind::kPublish:
        return publish();
      case StepKind::kWrappers:
        return wrappers();
    }
  }

  void show(const std::string& text, bool now = false) {
    progress_.show("distrun wrap: " + text, now);
  }

  // mksquashfs and unsquashfs: the percentage of their progress bar.
  void runBarTool(const BuildStep& step) {
    show(step.name + ": starting", true);
    ToolCall call{step.argv};
    call.onOutput = [this, &step](std::string_view recent) {
      if (auto percent = lastBarPercent(recent)) show(fmt::format("{}: {}%", step.name, *percent));
    };
    finishTool(step, call);
  }

  // mmdebstrap: its status line, and the files staged so far.
  void debootstrap(const BuildStep& step) {
    show(fmt::format("mmdebstrap: {} {} with {}", o_.suite, o_.variant, join(o_.packages, ",")),
         true);
    auto phase = std::make_shared<std::string>("starting");
    ToolCall call{step.argv};
    call.onOutput = [phase](std::string_view recent) {
      if (auto last = lastDebootstrapPhase(recent)) *phase = *last;
    };
    call.onTick = [this, phase] {
      show(
          fmt::format("mmdebstrap: {}: {} files staged", *phase, measureTree(paths_.root).entries));
    };
    finishTool(step, call);
    forgetBuildHost(paths_.root);
    std::vector<std::string> mounts = mountsUnder(paths_.root);
    if (!mounts.empty()) {
      throw IoError(
          fmt::format("wrap: mmdebstrap left {} mounted in the staging tree: unmount "
                      "it; distrun will not pack a host file system into the image",
                      mounts.front()));
    }
  }

  void copyDir(const BuildStep& step) {
    const std::string hostDest = resolveInRoot(paths_.root, step.dir.destination);
    std::error_code ec;
    fs::create_directories(fs::path(hostDest).parent_path(), ec);
    show(fmt::format("cp {} to {}", step.dir.source, step.dir.destination), true);
    ToolCall call{copyCommand(step.dir.source, hostDest)};
    call.onTick = [this, &step] {
      show(fmt::format("cp {} to {}: {} files staged", step.dir.source, step.dir.destination,
                       measureTree(paths_.root).entries));
    };
    finishTool(step, call);
  }

  // The environment at /opt/env: the base image's when it has one (--pip
  // adds to it), else made with the image's own Python.
  void pythonEnv(const BuildStep& step) {
    if (::mkdir(paths_.pip.c_str(), 0700) != 0 && errno != EEXIST) {
      throw IoError(fmt::format("staging {}: cannot create: {}", paths_.pip, std::strerror(errno)));
    }
    if (fs::exists(resolveInRoot(paths_.root, kPythonEnvPython))) {
      show(fmt::format("venv: adding to the image's {}", kPythonEnv), true);
      return;
    }
    if (!fs::exists(resolveInRoot(paths_.root, "/usr/bin/python3"))) {
      throw DataError(
          fmt::format("wrap: --pip: the image has no /usr/bin/python3 to make {} with: add --apt "
                      "python3,python3-venv (or --base an image that has Python)",
                      kPythonEnv));
    }
    show(fmt::format("venv: making {} with the image's /usr/bin/python3", kPythonEnv), true);
    ToolExit exit = world_.runner.run(ToolCall{step.argv});
    if (exit.code != 0) {
      progress_.clear();
      throw DataError(fmt::format(
          "wrap: python3 -m venv {} failed (exit {}): {}: the image's Python needs its venv "
          "module and ensurepip (add python3-venv to --apt)",
          kPythonEnv, exit.code, reasonIn(exit.tail)));
    }
    appendEnvironment(paths_.root,
                      environmentLines({{"VIRTUAL_ENV", kPythonEnv}}, {kPythonEnvBin}));
  }

  void writeCondaRequirements() {
    for (size_t i = 0; i < o_.pip.size(); ++i) {
      const PipSource& source = o_.pip[i];
      if (source.kind != PipSource::Kind::kCondaEnvFile) continue;
      std::vector<std::string> lines = condaEnvFilePipLines(source.text, pipInputFolder(i));
      writeFileAtomically(paths_.pip + "/" + condaRequirementsFile(i), join(lines, "\n") + "\n",
                          "the pip list of " + source.text);
    }
  }

  // pip's lines on the live line; its failure as pip's own one line.
  void pipInstall(const BuildStep& step) {
    writeCondaRequirements();
    show("pip: starting", true);
    auto phase = std::make_shared<std::string>("starting");
    ToolCall call{step.argv};
    call.onOutput = [this, phase](std::string_view recent) {
      const std::string last = lastPipLine(recent);
      if (!last.empty() && last != *phase) {
        *phase = last;
        show("pip: " + last);
      }
    };
    call.onTick = [this, phase] {
      show(fmt::format("pip: {}: {} files staged", *phase, measureTree(paths_.root).entries));
    };
    ToolExit exit = world_.runner.run(call);
    if (exit.code == 0) return;
    progress_.clear();
    std::string reason = pipFailureReason(exit.tail);
    if (reason.empty()) {
      printTail(step, exit);
      reason = reasonIn(exit.tail);
    }
    throw DataError(fmt::format("wrap: pip install failed (exit {}): {}", exit.code, reason));
  }

  // What the image holds, where Apptainer's `inspect --labels` and
  // `distrun wrap --list` read it.
  void labels(const BuildStep& step) {
    std::vector<std::pair<std::string, std::string>> values;
    if (!o_.packages.empty()) values.emplace_back(kAptLabel, join(o_.packages, ","));
    if (!step.argv.empty()) {
      ToolCall call{step.argv};
      call.stdoutPath = paths_.pip + "/freeze.txt";
      ToolExit exit = world_.runner.run(call);
      auto freeze = readFileIfPresent(call.stdoutPath);
      if (exit.code != 0 || !freeze) {
        progress_.clear();
        throw DataError(
            fmt::format("wrap: pip freeze failed (exit {}): {}", exit.code, reasonIn(exit.tail)));
      }
      values.emplace_back(kPythonEnvLabel, kPythonEnv);
      values.emplace_back(kPipFreezeLabel, *freeze);
    }
    const std::string path = resolveInRoot(paths_.root, kLabelsFile);
    const std::string existing = readFileIfPresent(path).value_or("");
    writeFileAtomically(path, mergedLabels(existing, values), "the image's labels");
    ::chmod(path.c_str(), 0644);
  }

  void squash(const BuildStep& step) {
    report_.staged = measureTree(paths_.root);
    if (!o_.wrappers.empty()) {
      std::vector<std::string> paths =
          o_.wrapPaths.empty() ? defaultWrapPaths(paths_.root, o_.dirs) : o_.wrapPaths;
      programs_ = programsToWrap(paths_.root, paths);
    }
    runBarTool(step);
  }

  void finishTool(const BuildStep& step, const ToolCall& call) {
    ToolExit exit = world_.runner.run(call);
    if (exit.code == 0) return;
    progress_.clear();
    if (step.kind == StepKind::kUnpackBase && exit.code == kUnsquashfsNonFatal) {
      if (!o_.quiet) {
        world_.err << fmt::format(
            "distrun wrap: unsquashfs could not recreate every file of {} ({}); the image has "
            "the rest\n",
            o_.base, reasonIn(exit.tail));
      }
      return;
    }
    printTail(step, exit);
    const std::string reason = reasonIn(exit.tail);
    const std::string message = fmt::format("wrap: {} failed (exit {}){}", step.name, exit.code,
                                            reason.empty() ? "" : ": " + reason);
    if (step.kind == StepKind::kDebootstrap) {
      throw ConfigError(message + fmt::format(": check the --apt package names, --suite {} and "
                                              "the apt sources (--mirror)",
                                              o_.suite));
    }
    throw IoError(message);
  }

  void printTail(const BuildStep& step, const ToolExit& exit) {
    if (o_.quiet) return;
    for (const std::string& line : split(exit.tail, '\n')) {
      if (!line.empty()) world_.err << "  " << step.name << "| " << line << "\n";
    }
  }

  void wrapSif() {
    show("writing SIF", true);
    SifOptions options;
    options.arch = inputs_.arch;
    world_.writeSif(paths_.squashfs, paths_.partial, options);
  }

  void publish() {
    fsyncPath(paths_.partial, O_RDONLY);
    if (::rename(paths_.partial.c_str(), o_.output.c_str()) != 0) {
      throw IoError(fmt::format("image {}: cannot rename {} to it: {}", o_.output, paths_.partial,
                                std::strerror(errno)));
    }
    fsyncPath(fs::path(o_.output).parent_path().string(), O_RDONLY | O_DIRECTORY);
    report_.image = o_.output;
    report_.format = o_.format;
    report_.imageBytes = fileSize(o_.output);
  }

  void wrappers() {
    writeWrappers(o_.wrappers, world_.distrun, o_.output, programs_);
    report_.wrappers = programs_.size();
    report_.wrapperDir = o_.wrappers + "/bin";
  }

  const WrapOptions& o_;
  const BuildInputs& inputs_;
  BuildWorld& world_;
  BuildPaths paths_;
  ProgressLine progress_;
  BuildReport report_;
  std::vector<WrappedProgram> programs_;
};

std::string makeStaging(const std::string& parent) {
  std::string pattern = parent + "/distrun-wrap-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw IoError(
        fmt::format("staging folder {}: cannot create a folder in it: {}: choose "
                    "another with --tmpdir",
                    parent, std::strerror(errno)));
  }
  return pattern;
}

// After a failure: the partial image and the staging folder go; a failure
// to remove them is said, and the original error is the one thrown.
void cleanUp(const BuildPaths& paths, std::ostream& err) {
  if (::unlink(paths.partial.c_str()) != 0 && errno != ENOENT) {
    err << fmt::format("distrun wrap: could not remove the partial image {}: {}\n", paths.partial,
                       std::strerror(errno));
  }
  try {
    if (!removeStaging(paths.staging)) {
      err << fmt::format("distrun wrap: could not remove all of {}\n", paths.staging);
    }
  } catch (const Error& e) {
    err << "distrun wrap: " << e.what() << "\n";
  }
}

}  // namespace

BuildPaths buildPathsFor(const WrapOptions& options, const std::string& staging, long pid) {
  BuildPaths paths;
  paths.staging = staging;
  paths.root = staging + "/root";
  paths.partial = fmt::format("{}.partial-{}", options.output, pid);
  paths.pip = staging + "/pip";
  paths.squashfs =
      options.format == ImageFormat::kSif ? staging + "/image.squashfs" : paths.partial;
  return paths;
}

std::string goArchFor(const std::string& machine) {
  static const std::map<std::string, std::string> names = {
      {"x86_64", "amd64"},    {"aarch64", "arm64"}, {"i686", "386"},        {"i386", "386"},
      {"ppc64le", "ppc64le"}, {"s390x", "s390x"},   {"riscv64", "riscv64"}, {"armv7l", "arm"}};
  auto it = names.find(machine);
  return it == names.end() ? machine : it->second;
}

BuildInputs hostBuildInputs(const WrapOptions& options, const Environment& env) {
  BuildInputs inputs;
  inputs.processors = static_cast<int>(usableCpus().size());
  inputs.mirrors = options.mirrors;
  if (inputs.mirrors.empty() && !options.packages.empty()) {
    inputs.mirrors = hostSourcesFor(options.suite);
  }
  if (!options.base.empty()) inputs.baseOffset = openImage(options.base).rootOffset;
  struct utsname host {};
  if (::uname(&host) == 0) inputs.arch = goArchFor(host.machine);
  inputs.allRoot = ::geteuid() != 0;
  if (!options.pip.empty()) {
    inputs.pipCache = hostPipCache(env);
    std::error_code ec;
    if (!inputs.pipCache.empty()) fs::create_directories(inputs.pipCache, ec);
    if (ec) inputs.pipCache.clear();
    inputs.pipCert = hostPipCert(env);
    inputs.pipVariables = passedPipVariables(env);
  }
  return inputs;
}

std::vector<std::string> copyCommand(const std::string& source, const std::string& hostDest) {
  return {"cp", "-a", "-T", source, hostDest};
}

std::vector<BuildStep> planBuild(const WrapOptions& o, const BuildPaths& paths,
                                 const BuildInputs& inputs) {
  std::vector<BuildStep> steps;
  if (!o.base.empty()) {
    steps.push_back(toolStep(StepKind::kUnpackBase, "unsquashfs", unpackCommand(o, paths, inputs)));
  }
  if (!o.packages.empty()) {
    steps.push_back(
        toolStep(StepKind::kDebootstrap, "mmdebstrap", debootstrapCommand(o, paths, inputs)));
  }
  for (const DirSource& dir : o.dirs) {
    BuildStep copy = toolStep(StepKind::kCopyDir, "cp", {});
    copy.dir = dir;
    steps.push_back(copy);
  }
  if (!o.pip.empty()) {
    steps.push_back(toolStep(
        StepKind::kVenv, "venv",
        pipSandboxCommand(paths.root, {paths.pip, ""}, {}, inputs.pipVariables, venvCommand())));
    steps.push_back(toolStep(StepKind::kPipInstall, "pip", pipInstallCommand(o, paths, inputs)));
  }
  steps.push_back(toolStep(StepKind::kLayout, "", {}));
  if (!o.env.empty() || !o.paths.empty()) {
    BuildStep environment = toolStep(StepKind::kEnvironment, "", {});
    environment.text = environmentLines(o.env, o.paths);
    steps.push_back(environment);
  }
  if (!o.pip.empty() || !o.packages.empty()) {
    steps.push_back(
        toolStep(StepKind::kLabels, "",
                 o.pip.empty() ? std::vector<std::string>{} : pipFreezeCommand(paths, inputs)));
  }
  steps.push_back(toolStep(StepKind::kSquash, "mksquashfs", squashCommand(o, paths, inputs)));
  if (o.format == ImageFormat::kSif) steps.push_back(toolStep(StepKind::kSif, "SIF", {}));
  steps.push_back(toolStep(StepKind::kPublish, "", {}));
  if (!o.wrappers.empty()) steps.push_back(toolStep(StepKind::kWrappers, "", {}));
  return steps;
}

BuildReport wrapImage(const WrapOptions& options, const BuildInputs& inputs, BuildWorld& world) {
  const long pid = world.pid != 0 ? world.pid : static_cast<long>(::getpid());
  BuildPaths paths = buildPathsFor(options, makeStaging(options.tmpdir), pid);
  Build build(options, inputs, world, paths);
  try {
    if (::mkdir(paths.root.c_str(), 0755) != 0) {
      throw IoError(fmt::format("staging {}: cannot create: {}", paths.root, std::strerror(errno)));
    }
    BuildReport report = build.run(planBuild(options, paths, inputs));
    if (!removeStaging(paths.staging)) {
      world.err << fmt::format("distrun wrap: could not remove all of {}\n", paths.staging);
    }
    return report;
  } catch (...) {
    build.clearProgress();
    cleanUp(paths, world.err);
    throw;
  }
}

}  // namespace distrun::container
