#include "distrun/container/runtime_command.h"

#include <sys/stat.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/testing/container_tools.h"

namespace distrun::container {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// A folder of stub executables standing in for the runtimes on PATH. They
// prove which one distrun chooses and what it would run; they are not a
// test of Apptainer or Singularity, which Debian does not package.
class StubPath {
 public:
  explicit StubPath(const std::string& name) : dir_(name) {}
  std::string add(const std::string& program, bool executable = true) {
    std::string path = dir_.path() + "/" + program;
    std::ofstream(path) << "#!/bin/sh\nexit 0\n";
    ::chmod(path.c_str(), executable ? 0755 : 0644);
    return path;
  }
  const std::string& path() const { return dir_.path(); }

 private:
  testing::ScratchDir dir_;
};

MapEnvironment withPath(const std::string& path) { return MapEnvironment{{"PATH", path}}; }

TEST(FindOnPathTest, FindsTheFirstExecutableFileInPathOrder) {
  StubPath first("path-a"), second("path-b");
  first.add("tool", false);  // not executable: skipped
  std::string found = second.add("tool");
  EXPECT_EQ(findOnPath("tool", first.path() + ":" + second.path()), found);
  EXPECT_EQ(findOnPath("missing", first.path() + ":" + second.path()), std::nullopt);
}

TEST(ChooseRuntimeTest, AutoTakesApptainerThenSingularityThenDistrunsOwn) {
  StubPath stubs("runtimes");
  std::string bwrap = stubs.add("bwrap");
  EXPECT_EQ(chooseRuntime(RuntimeChoice::kAuto, withPath(stubs.path())).kind,
            RuntimeChoice::kDistrun);
  std::string singularity = stubs.add("singularity");
  Runtime chosen = chooseRuntime(RuntimeChoice::kAuto, withPath(stubs.path()));
  EXPECT_EQ(chosen.kind, RuntimeChoice::kSingularity);
  EXPECT_EQ(chosen.executable, singularity);
  std::string apptainer = stubs.add("apptainer");
  chosen = chooseRuntime(RuntimeChoice::kAuto, withPath(stubs.path()));
  EXPECT_EQ(chosen.kind, RuntimeChoice::kApptainer);
  EXPECT_EQ(chosen.executable, apptainer);
  chosen = chooseRuntime(RuntimeChoice::kDistrun, withPath(stubs.path()));
  EXPECT_EQ(chosen.kind, RuntimeChoice::kDistrun);
  EXPECT_EQ(chosen.executable, bwrap);
}

void expectConfigError(RuntimeChoice choice, const std::string& path, const std::string& message) {
  try {
    chooseRuntime(choice, withPath(path));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), message);
    EXPECT_EQ(e.exitCode(), ExitCode::kConfig);
  }
}

TEST(ChooseRuntimeTest, ARuntimeThatIsNotOnPathIsAnErrorNamingTheWayOut) {
  StubPath empty("empty");
  const std::string& p = empty.path();
  expectConfigError(RuntimeChoice::kApptainer, p,
                    "--container-runtime apptainer: apptainer is not on PATH (" + p +
                        "): load the site's module (module load apptainer), or choose "
                        "--container-runtime distrun");
  expectConfigError(RuntimeChoice::kDistrun, p,
                    "--container-runtime distrun: distrun's container runtime needs bwrap, which "
                    "is not on PATH (" +
                        p + "): install the Debian package bubblewrap (scripts/install-deps does)");
  expectConfigError(RuntimeChoice::kAuto, p,
                    "--container-runtime auto: neither apptainer nor singularity is on PATH (" + p +
                        "), and distrun's own runtime needs bwrap, which is not either: install "
                        "the Debian package bubblewrap, or load the site's apptainer module");
}

TEST(SiteRuntimeCommandTest, ExecWithBindsGpuFlagsWorkingDirectoryAndTheImage) {
  SiteRuntimeSpec spec{"/opt/apptainer/bin/apptainer",
                       "/images/t.sif",
                       {{"/scratch", "/scratch", false}, {"/opt/cray", "/cray", true}},
                       true,
                       true};
  EXPECT_THAT(
      siteRuntimeCommand(spec, {"python3", "-c", "1"}, "/home/ada"),
      ElementsAre("/opt/apptainer/bin/apptainer", "exec", "--bind", "/scratch:/scratch", "--bind",
                  "/opt/cray:/cray:ro", "--nv", "--rocm", "--pwd", "/home/ada", "--env",
                  "DISTRUN_CONTAINER=/images/t.sif", "/images/t.sif", "python3", "-c", "1"));
  spec.nvidia = spec.rocm = false;
  spec.binds.clear();
  EXPECT_THAT(siteRuntimeCommand(spec, {"true"}, "/w"),
              ElementsAre("/opt/apptainer/bin/apptainer", "exec", "--pwd", "/w", "--env",
                          "DISTRUN_CONTAINER=/images/t.sif", "/images/t.sif", "true"));
}

SandboxSpec exampleSpec() {
  SandboxSpec spec;
  spec.bwrap = "/usr/bin/bwrap";
  spec.sandboxTool = "/opt/distrun/bin/distrun-sandbox";
  spec.imageRoot = "/tmp/distrun-0/containers/k/root";
  spec.image = "/images/t.sif";
  spec.binds = {{{"/data", "/data", true}, false}};
  spec.home = "/home/ada";
  spec.tmpdir = "/tmp/job7";
  spec.hostFiles = {"/etc/hosts"};
  return spec;
}

std::vector<std::string> destinations(const std::vector<SandboxMount>& mounts) {
  std::vector<std::string> out;
  for (const SandboxMount& m : mounts) out.push_back(m.destination);
  return out;
}

TEST(SandboxMountsTest, SystemFoldersHomeHostFilesWorkingDirectoryToolThenBinds) {
  std::vector<SandboxMount> mounts = sandboxMounts(exampleSpec(), "/work/p");
  EXPECT_THAT(destinations(mounts),
              ElementsAre("/dev", "/proc", "/sys", "/tmp", "/home/ada", "/etc/hosts", "/work/p",
                          "/.distrun/distrun-sandbox", "/data"));
  EXPECT_EQ(mounts[0].kind, SandboxMount::Kind::kDeviceBind);
  EXPECT_EQ(mounts[2].kind, SandboxMount::Kind::kReadOnlyBind);
  EXPECT_TRUE(mounts[5].optional);
  EXPECT_EQ(mounts[8].kind, SandboxMount::Kind::kReadOnlyBind);
  EXPECT_EQ(mounts[8].origin, "bind /data:/data:ro");
}

TEST(SandboxMountsTest, AFolderShownByAnEarlierMountIsNotMountedAgain) {
  SandboxSpec spec = exampleSpec();
  spec.tmpdir = "/scratch/job7";
  EXPECT_THAT(destinations(sandboxMounts(spec, "/home/ada/p")),
              ElementsAre("/dev", "/proc", "/sys", "/tmp", "/scratch/job7", "/home/ada",
                          "/etc/hosts", "/.distrun/distrun-sandbox", "/data"));
  spec.home = "/";
  spec.tmpdir = "";
  EXPECT_THAT(destinations(sandboxMounts(spec, "/")),
              ElementsAre("/dev", "/proc", "/sys", "/tmp", "/etc/hosts",
                          "/.distrun/distrun-sandbox", "/data"));
}

// An image of one folder holding one file: /bin/sh.
class TinyTree : public ImageTree {
 public:
  EntryKind kind(const std::string& path) const override {
    if (path == "/bin") return EntryKind::kDirectory;
    return path == "/bin/sh" ? EntryKind::kFile : EntryKind::kMissing;
  }
  std::vector<std::string> entries(const std::string& path) const override {
    return path == "/" ? std::vector<std::string>{"bin"} : std::vector<std::string>{};
  }
  std::string linkTarget(const std::string&) const override { return ""; }
};

TEST(SandboxCommandTest, SuperviseBwrapTheTreeThenStartAndTheProgram) {
  SandboxSpec spec = exampleSpec();
  spec.binds.clear();
  spec.hostFiles.clear();
  std::vector<std::string> expected = {
      "/opt/distrun/bin/distrun-sandbox",
      "supervise",
      "--",
      "/usr/bin/bwrap",
      "--die-with-parent",
      "--ro-bind",
      "/tmp/distrun-0/containers/k/root/bin",
      "/bin",
      "--dev-bind",
      "/dev",
      "/dev",
      "--bind",
      "/proc",
      "/proc",
      "--ro-bind",
      "/sys",
      "/sys",
      "--bind",
      "/tmp",
      "/tmp",
      "--bind",
      "/w",
      "/w",
      "--bind",
      "/home/ada",
      "/home/ada",
      "--ro-bind",
      "/opt/distrun/bin/distrun-sandbox",
      "/.distrun/distrun-sandbox",
      "--remount-ro",
      "/",
      "--chdir",
      "/w",
      "--setenv",
      "DISTRUN_CONTAINER",
      "/images/t.sif",
      "--setenv",
      "PATH",
      "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      "--",
      "/.distrun/distrun-sandbox",
      "start",
      "--",
      "python3",
      "x.py"};
  EXPECT_THAT(sandboxCommand(spec, TinyTree(), {"python3", "x.py"}, "/w"),
              ElementsAreArray(expected));
  std::vector<std::string> bwrapPart(expected.begin() + 3, expected.end());
  EXPECT_THAT(bwrapCommand(spec, TinyTree(), {"python3", "x.py"}, "/w"),
              ElementsAreArray(bwrapPart));
}

TEST(SandboxCommandTest, TheImagesEnvironmentScriptsAreSourcedByItsShellFirst) {
  SandboxSpec spec = exampleSpec();
  spec.envScripts = true;
  std::vector<std::string> argv = sandboxCommand(spec, TinyTree(), {"env"}, "/w");
  std::vector<std::string> tail(argv.end() - 6, argv.end());
  EXPECT_THAT(tail, ElementsAre("--", "/bin/sh", "-c",
                                "for f in /.singularity.d/env/*.sh; do if [ -f \"$f\" ]; then . "
                                "\"$f\"; fi; done; exec \"$@\"",
                                "distrun-container", "env"));
}

TEST(SandboxCommandTest, ABindTheImageCannotTakeIsAConfigError) {
  SandboxSpec spec = exampleSpec();
  spec.binds = {{{"/x", "/bin/sh/x", false}, false}};  // under the image's file /bin/sh
  EXPECT_THROW(sandboxCommand(spec, TinyTree(), {"true"}, "/w"), ConfigError);
}

}  // namespace
}  // namespace distrun::container
