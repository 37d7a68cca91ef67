#include "distrun/container/runtime_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/container/internal/paths.h"

namespace distrun::container {

namespace {

// What Apptainer's action scripts do before `exec`: source the image's
// environment scripts in order.
constexpr const char* kEnvScripts =
    "for f in /.singularity.d/env/*.sh; do if [ -f \"$f\" ]; then . \"$f\"; fi; done; "
    "exec \"$@\"";

// The PATH a program starts with inside, as Apptainer sets it: the host's
// folders mean nothing in the image (a ~/.pyenv shim on the host PATH would
// shadow the image's python3). The image's environment scripts may extend it.
constexpr const char* kContainerPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

bool isExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string pathOf(const Environment& env) { return env.getOr("PATH", "/usr/bin:/bin"); }

ConfigError notOnPath(RuntimeChoice choice, const std::string& path) {
  std::string name = runtimeName(choice);
  if (choice == RuntimeChoice::kDistrun) {
    return ConfigError(fmt::format(
        "--container-runtime distrun: distrun's container runtime needs bwrap, which is not on "
        "PATH ({}): install the Debian package bubblewrap (scripts/install-deps does)",
        path));
  }
  return ConfigError(
      fmt::format("--container-runtime {}: {} is not on PATH ({}): load the "
                  "site's module (module load {}), or choose "
                  "--container-runtime distrun",
                  name, name, path, name));
}

ConfigError nothingOnPath(const std::string& path) {
  return ConfigError(fmt::format(
      "--container-runtime auto: neither apptainer nor singularity is on PATH ({}), and "
      "distrun's own runtime needs bwrap, which is not either: install the Debian package "
      "bubblewrap, or load the site's apptainer module",
      path));
}

class MountList {
 public:
  void add(SandboxMount::Kind kind, const std::string& source, const std::string& destination,
           bool isFile, const std::string& origin) {
    mounts_.push_back(SandboxMount{kind, source, destination, isFile, false, origin});
  }
  void addOptionalFile(const std::string& path) {
    mounts_.push_back(
        SandboxMount{SandboxMount::Kind::kReadOnlyBind, path, path, true, true, path});
  }
  // A host folder at its own path, unless an earlier mount shows it already.
  void addOwnPath(const std::string& path, const std::string& origin) {
    if (path.empty() || path == "/" || shown(path)) return;
    add(SandboxMount::Kind::kBind, path, path, false, origin);
  }
  std::vector<SandboxMount> take() { return std::move(mounts_); }

 private:
  bool shown(const std::string& path) const {
    return std::any_of(mounts_.begin(), mounts_.end(), [&](const SandboxMount& m) {
      return m.source == m.destination && !m.sourceIsFile && detail::atOrUnder(path, m.destination);
    });
  }
  std::vector<SandboxMount> mounts_;
};

std::string bindText(const Bind& bind) {
  return fmt::format("{}:{}{}", bind.source, bind.destination, bind.readOnly ? ":ro" : "");
}

}  // namespace

std::optional<std::string> findOnPath(const std::string& name, const std::string& path) {
  for (const std::string& folder : split(path, ':')) {
    std::string candidate = (folder.empty() ? "." : folder) + "/" + name;
    if (isExecutableFile(candidate)) return candidate;
  }
  return std::nullopt;
}

Runtime chooseRuntime(RuntimeChoice choice, const Environment& env) {
  const std::string path = pathOf(env);
  if (choice != RuntimeChoice::kAuto) {
    std::string name = choice == RuntimeChoice::kDistrun ? "bwrap" : runtimeName(choice);
    std::optional<std::string> found = findOnPath(name, path);
    if (!found) throw notOnPath(choice, path);
    return Runtime{choice, *found};
  }
  for (RuntimeChoice site : {RuntimeChoice::kApptainer, RuntimeChoice::kSingularity}) {
    if (auto found = findOnPath(runtimeName(site), path)) return Runtime{site, *found};
  }
  if (auto bwrap = findOnPath("bwrap", path)) return Runtime{RuntimeChoice::kDistrun, *bwrap};
  throw nothingOnPath(path);
}

std::vector<SandboxMount> sandboxMounts(const SandboxSpec& spec, const std::string& workingDir) {
  using Kind = SandboxMount::Kind;
  MountList list;
  list.add(Kind::kDeviceBind, "/dev", "/dev", false, "the host's /dev");
  list.add(Kind::kBind, "/proc", "/proc", false, "/proc");
  list.add(Kind::kReadOnlyBind, "/sys", "/sys", false, "/sys");
  list.addOwnPath("/tmp", "/tmp");
  list.addOwnPath(spec.tmpdir, "$TMPDIR " + spec.tmpdir);
  list.addOwnPath(spec.home, "$HOME " + spec.home);
  for (const std::string& file : spec.hostFiles) list.addOptionalFile(file);
  list.addOwnPath(workingDir, "the working directory " + workingDir);
  list.add(Kind::kReadOnlyBind, spec.sandboxTool, kSandboxToolInside, true, "distrun-sandbox");
  for (const HostBind& host : spec.binds) {
    list.add(host.bind.readOnly ? Kind::kReadOnlyBind : Kind::kBind, host.bind.source,
             host.bind.destination, host.isFile, "bind " + bindText(host.bind));
  }
  return list.take();
}

std::vector<std::string> bwrapCommand(const SandboxSpec& spec, const ImageTree& image,
                                      const std::vector<std::string>& program,
                                      const std::string& workingDir) {
  std::vector<std::string> argv = {spec.bwrap, "--die-with-parent"};
  std::vector<std::string> tree =
      planMounts(image, spec.imageRoot, sandboxMounts(spec, workingDir));
  argv.insert(argv.end(), tree.begin(), tree.end());
  argv.insert(argv.end(), {"--remount-ro", "/", "--chdir", workingDir, "--setenv",
                           kContainerVariable, spec.image, "--setenv", "PATH", kContainerPath, "--",
                           kSandboxToolInside, "start", "--"});
  if (spec.envScripts) argv.insert(argv.end(), {"/bin/sh", "-c", kEnvScripts, "distrun-container"});
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

std::vector<std::string> sandboxCommand(const SandboxSpec& spec, const ImageTree& image,
                                        const std::vector<std::string>& program,
                                        const std::string& workingDir) {
  std::vector<std::string> argv = {spec.sandboxTool, "supervise", "--"};
  std::vector<std::string> inner = bwrapCommand(spec, image, program, workingDir);
  argv.insert(argv.end(), inner.begin(), inner.end());
  return argv;
}

std::vector<std::string> siteRuntimeCommand(const SiteRuntimeSpec& spec,
                                            const std::vector<std::string>& program,
                                            const std::string& workingDir) {
  std::vector<std::string> argv = {spec.executable, "exec"};
  for (const Bind& bind : spec.binds) argv.insert(argv.end(), {"--bind", bindText(bind)});
  if (spec.nvidia) argv.push_back("--nv");
  if (spec.rocm) argv.push_back("--rocm");
  argv.insert(argv.end(), {"--pwd", workingDir, "--env",
                           fmt::format("{}={}", kContainerVariable, spec.image), spec.image});
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

}  // namespace distrun::container
