#include "distrun/container/image_build.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/container/staging_tree.h"
#include "distrun/container/test_images.h"
#include "distrun/testing/container_tools.h"

namespace distrun::container {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Argv = std::vector<std::string>;

void writeFile(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// Stands in for the tools: does a small version of each one's work on the
// paths in its command line, or fails or is interrupted where told to.
class FakeBuildTools : public BuildTools {
 public:
  ToolExit run(const ToolCall& call) override {
    calls.push_back(call.argv);
    const std::string tool = toolOf(call.argv);
    if (tool == interruptIn) {
      if (tool == "mksquashfs") writeFile(call.argv[2], "half an image");
      throw BuildInterrupted(SIGINT);
    }
    if (auto it = failures.find(tool); it != failures.end()) return it->second;
    if (tool == "mmdebstrap") writeFile(call.argv[4] + "/usr/bin/busybox", "busybox");
    if (tool == "mmdebstrap" && pythonInTree) writeFile(call.argv[4] + "/usr/bin/python3", "py");
    if (tool == "unsquashfs") writeFile(call.argv[5] + "/from-base", "base");
    if (tool == "venv") writeFile(call.argv[2] + "/opt/env/bin/python", "python");
    if (tool == "pip install") {
      if (call.onOutput) call.onOutput("Collecting six==1.16.0\n");
      writeFile(call.argv[2] + "/opt/env/lib/six.py", "six");
    }
    if (tool == "pip freeze") writeFile(call.stdoutPath, "six==1.16.0\n");
    if (tool == "cp") fs::copy(call.argv[3], call.argv[4], fs::copy_options::recursive);
    if (tool == "mksquashfs") {
      squashedTree = measureTree(call.argv[1]);
      squashedEnvFile = readFileIfPresent(call.argv[1] + kEnvFile).value_or("");
      squashedLabels = readFileIfPresent(call.argv[1] + kLabelsFile).value_or("");
      for (const auto& entry : fs::recursive_directory_iterator(call.argv[1])) {
        squashedPaths.insert(fs::relative(entry.path(), call.argv[1]).string());
      }
      writeFile(call.argv[2], "hsqs and the rest");
    }
    if (call.onOutput) call.onOutput("\r[===] 3/3 100%");
    return {0, ""};
  }

  // The tool, or for bubblewrap what runs inside: "venv", "pip install".
  static std::string toolOf(const Argv& argv) {
    if (argv.front() != "bwrap") return argv.front();
    auto program = std::find(argv.begin(), argv.end(), "--") + 1;
    if (program + 3 < argv.end() && program[2] == "pip") return "pip " + program[3];
    return program + 2 < argv.end() ? program[2] : *program;
  }

  std::vector<Argv> calls;
  std::map<std::string, ToolExit> failures;
  std::string interruptIn;
  bool pythonInTree = false;  // mmdebstrap leaves /usr/bin/python3
  TreeStats squashedTree;
  std::string squashedEnvFile;
  std::string squashedLabels;
  std::set<std::string> squashedPaths;
};

class ImageBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(scratch_.path().empty());
    fs::create_directories(at("tmp"));
    writeFile(at("venv/bin/python"), "#!/bin/sh\n");
    fs::permissions(at("venv/bin/python"), fs::perms::owner_all);
    writeFile(at("venv/lib/site.py"), "print()\n");
  }

  std::string at(const std::string& relative) { return scratch_.path() + "/" + relative; }

  WrapOptions options() {
    WrapOptions o;
    o.output = at("env.sqfs");
    o.format = ImageFormat::kSquashfs;
    o.dirs = {{at("venv"), "/opt/env"}};
    o.tmpdir = at("tmp");
    return o;
  }

  BuildReport build(const WrapOptions& o) {
    BuildWorld world{
        .runner = runner_,
        .interrupted = [this] { return interrupted_; },
        .err = err_,
        .now = [this] { return clock_ += 10.0; },  // every line is printed
        .distrun = "/opt/distrun/bin/distrun",
        .writeSif =
            [this](const std::string& squashfs, const std::string& out, const SifOptions& options) {
              sifCalls_.push_back({squashfs, out, options.arch});
              writeFile(out, "SIF around " + readFileIfPresent(squashfs).value_or(""));
            },
        .pid = 4711};
    return wrapImage(o, inputs_, world);
  }

  bool stagingIsGone() { return fs::is_empty(at("tmp")); }

  distrun::testing::ScratchDir scratch_{"image-build"};
  FakeBuildTools runner_;
  BuildInputs inputs_{.processors = 8,
                      .mirrors = {"/etc/apt/sources.list.d/debian.sources"},
                      .baseOffset = 4096,
                      .arch = "amd64"};
  int interrupted_ = 0;
  double clock_ = 0;
  std::ostringstream err_;
  std::vector<Argv> sifCalls_;
};

TEST_F(ImageBuildTest, ThePlanStacksBaseThenPackagesThenDirs) {
  WrapOptions o = options();
  o.format = ImageFormat::kSif;
  o.output = "/images/env.sif";
  o.base = "/images/base.sif";
  o.packages = {"python3", "busybox"};
  o.suite = "bookworm";
  o.dirs.push_back({"/home/u/proj", "/opt/proj"});
  o.env = {{"A", "1"}};
  o.wrappers = "/opt/wrapped";
  BuildPaths paths = buildPathsFor(o, "/tmp/distrun-wrap-x", 42);
  EXPECT_EQ(paths.root, "/tmp/distrun-wrap-x/root");
  EXPECT_EQ(paths.squashfs, "/tmp/distrun-wrap-x/image.squashfs");
  EXPECT_EQ(paths.partial, "/images/env.sif.partial-42");
  std::vector<BuildStep> steps = planBuild(o, paths, inputs_);
  std::vector<StepKind> kinds;
  for (const BuildStep& s : steps) kinds.push_back(s.kind);
  EXPECT_THAT(kinds, ElementsAre(StepKind::kUnpackBase, StepKind::kDebootstrap, StepKind::kCopyDir,
                                 StepKind::kCopyDir, StepKind::kLayout, StepKind::kEnvironment,
                                 StepKind::kLabels, StepKind::kSquash, StepKind::kSif,
                                 StepKind::kPublish, StepKind::kWrappers));
  EXPECT_EQ(steps[0].argv, (Argv{"unsquashfs", "-o", "4096", "-f", "-d", "/tmp/distrun-wrap-x/root",
                                 "/images/base.sif"}));
  EXPECT_EQ(steps[1].argv,
            (Argv{"mmdebstrap", "--variant=essential", "--include=python3,busybox", "bookworm",
                  "/tmp/distrun-wrap-x/root", "/etc/apt/sources.list.d/debian.sources"}));
  EXPECT_EQ(steps[2].dir.destination, "/opt/env");
  EXPECT_EQ(steps[3].dir.source, "/home/u/proj");
  EXPECT_EQ(steps[5].text, "export A=1\n");
  EXPECT_TRUE(steps[6].argv.empty());  // labels: --apt's packages, no pip freeze
  EXPECT_EQ(
      steps[7].argv,
      (Argv{"mksquashfs", "/tmp/distrun-wrap-x/root", "/tmp/distrun-wrap-x/image.squashfs", "-comp",
            "zstd", "-Xcompression-level", "3", "-noappend", "-processors", "8", "-progress"}));
}

TEST_F(ImageBuildTest, PipMakesTheEnvironmentFillsItAndLabelsTheImage) {
  WrapOptions o = options();
  o.dirs.clear();  // options()'s --dir would bring an /opt/env/bin/python
  o.base = "/images/base.sqfs";
  o.pip = {{PipSource::Kind::kRequirement, "six==1.16.0"}};
  o.findLinks = {at("wheels")};
  inputs_.pipCache = "/home/u/.cache/pip";
  BuildPaths paths = buildPathsFor(o, "/s", 7);
  std::vector<BuildStep> steps = planBuild(o, paths, inputs_);
  std::vector<StepKind> kinds;
  for (const BuildStep& step : steps) kinds.push_back(step.kind);
  EXPECT_THAT(kinds, ElementsAre(StepKind::kUnpackBase, StepKind::kVenv, StepKind::kPipInstall,
                                 StepKind::kLayout, StepKind::kLabels, StepKind::kSquash,
                                 StepKind::kPublish));
  const Argv& pip = steps[2].argv;
  const Argv program(std::find(pip.begin(), pip.end(), "--") + 1, pip.end());
  EXPECT_EQ(program, (Argv{"/opt/env/bin/python", "-m", "pip", "install", "--no-input",
                           "--disable-pip-version-check", "--progress-bar", "off", "six==1.16.0",
                           "--find-links", "/tmp/links/0"}));

  // The base has no Python: one line, exit 65, nothing left.
  EXPECT_EQ(test::thrownBy([&] { build(o); }).what(),
            std::string("wrap: --pip: the image has no /usr/bin/python3 to make /opt/env with: add "
                        "--apt python3,python3-venv (or --base an image that has Python)"));
  EXPECT_TRUE(stagingIsGone());
  EXPECT_FALSE(fs::exists(o.output));
}

TEST_F(ImageBuildTest, PipsEnvironmentIsOnPathAndItsFreezeInTheLabels) {
  WrapOptions o = options();
  o.dirs.clear();
  o.packages = {"python3", "python3-venv"};
  o.suite = "bookworm";
  o.pip = {{PipSource::Kind::kRequirement, "six==1.16.0"}};
  runner_.pythonInTree = true;
  build(o);
  EXPECT_THAT(runner_.squashedEnvFile, HasSubstr("export VIRTUAL_ENV=/opt/env\nPATH=/opt/env/bin"));
  EXPECT_THAT(runner_.squashedLabels,
              HasSubstr(R"("org.distrun.wrap.apt": "python3,python3-venv")"));
  EXPECT_THAT(runner_.squashedLabels,
              HasSubstr(R"("org.distrun.wrap.pip-freeze": "six==1.16.0\n")"));
  EXPECT_TRUE(runner_.squashedPaths.count("opt/env/lib/six.py"));
  runner_.failures["pip install"] = {
      1,
      "Collecting six==99\nERROR: Could not find a version that satisfies the requirement "
      "six==99 (from versions: 1.16.0)\nERROR: No matching distribution found for six==99"};
  const Error e = test::thrownBy([&] { build(o); });
  EXPECT_EQ(e.exitCode(), ExitCode::kData);
  EXPECT_EQ(std::string(e.what()),
            "wrap: pip install failed (exit 1): Could not find a version that satisfies the "
            "requirement six==99 (from versions: 1.16.0)");
  EXPECT_THAT(err_.str(), ::testing::Not(HasSubstr("pip| ")));  // pip's own line is enough
  EXPECT_TRUE(stagingIsGone());
}

TEST_F(ImageBuildTest, NotAsRootFilesArePackedAsRoots) {
  inputs_.allRoot = true;
  std::vector<BuildStep> steps = planBuild(options(), buildPathsFor(options(), "/s", 7), inputs_);
  EXPECT_EQ(steps[2].kind, StepKind::kSquash);
  EXPECT_EQ(steps[2].argv.back(), "-all-root");
}

TEST_F(ImageBuildTest, ABaseWithFilesUnsquashfsCouldNotRecreateStillBuilds) {
  WrapOptions o = options();
  o.base = "/images/base.sqfs";
  runner_.failures["unsquashfs"] = {2,
                                    "Parallel unsquashfs: Using 2 processors\n"
                                    "create_inode: could not create character device "
                                    "squashfs-root/dev/null, because you're not superuser!\n"
                                    "created 300 files\ncreated 0 hardlinks"};
  build(o);
  EXPECT_TRUE(fs::exists(o.output));
  EXPECT_THAT(err_.str(), HasSubstr("distrun wrap: unsquashfs could not recreate every file of "
                                    "/images/base.sqfs (create_inode: could not create character "
                                    "device squashfs-root/dev/null, because you're not "
                                    "superuser!); the image has the rest\n"));
  runner_.failures["unsquashfs"].code = 1;  // fatal
  EXPECT_THROW(build(o), IoError);
}

TEST_F(ImageBuildTest, ABareSquashfsIsWrittenAsThePartialImageItself) {
  WrapOptions o = options();
  BuildPaths paths = buildPathsFor(o, "/s", 7);
  EXPECT_EQ(paths.squashfs, paths.partial);
  std::vector<StepKind> kinds;
  for (const BuildStep& s : planBuild(o, paths, inputs_)) kinds.push_back(s.kind);
  EXPECT_THAT(kinds, ElementsAre(StepKind::kCopyDir, StepKind::kLayout, StepKind::kSquash,
                                 StepKind::kPublish));
}

TEST_F(ImageBuildTest, CopyKeepsSymlinksOwnersAndTimes) {
  EXPECT_EQ(copyCommand("/h/venv", "/s/root/opt/env"),
            (Argv{"cp", "-a", "-T", "/h/venv", "/s/root/opt/env"}));
}

TEST_F(ImageBuildTest, GoArchNames) {
  EXPECT_EQ(goArchFor("x86_64"), "amd64");
  EXPECT_EQ(goArchFor("aarch64"), "arm64");
  EXPECT_EQ(goArchFor("ppc64le"), "ppc64le");
  EXPECT_EQ(goArchFor("weird"), "weird");
}

TEST_F(ImageBuildTest, ABuildWritesTheImageAndRemovesTheStaging) {
  WrapOptions o = options();
  o.wrappers = at("wrapped");
  BuildReport report = build(o);
  EXPECT_EQ(readFileIfPresent(o.output).value_or(""), "hsqs and the rest");
  EXPECT_FALSE(fs::exists(o.output + ".partial-4711"));
  EXPECT_TRUE(stagingIsGone());
  EXPECT_EQ(report.image, o.output);
  EXPECT_EQ(report.imageBytes, 17u);
  EXPECT_GT(report.staged.entries, 4u);  // the venv plus the layout
  EXPECT_EQ(report.staged.entries, runner_.squashedTree.entries);
  ASSERT_EQ(report.steps.size(), 2u);
  EXPECT_EQ(report.steps[0].first, "cp");
  EXPECT_EQ(report.steps[1].first, "mksquashfs");
  EXPECT_EQ(report.wrappers, 1u);  // /opt/env/bin/python
  EXPECT_THAT(readFileIfPresent(at("wrapped/bin/python")).value_or(""),
              HasSubstr("exec /opt/distrun/bin/distrun enter " + o.output +
                        " -- /opt/env/bin/python \"$@\""));
  EXPECT_THAT(err_.str(), HasSubstr("distrun wrap: mksquashfs: 100%"));
}

TEST_F(ImageBuildTest, TheStagedTreeHoldsTheDirAtDestTheLayoutAndTheEnvironment) {
  WrapOptions o = options();
  o.env = {{"A", "1"}};
  build(o);
  for (const char* path : {"opt/env/bin/python", "opt/env/lib/site.py", "proc", "tmp",
                           ".singularity.d/env/90-distrun.sh"}) {
    EXPECT_EQ(runner_.squashedPaths.count(path), 1u) << path;
  }
}

TEST_F(ImageBuildTest, SifWrapsTheSquashfsFromTheStaging) {
  WrapOptions o = options();
  o.format = ImageFormat::kSif;
  o.output = at("env.sif");
  build(o);
  ASSERT_EQ(sifCalls_.size(), 1u);
  EXPECT_THAT(sifCalls_[0][0], HasSubstr("/image.squashfs"));
  EXPECT_EQ(sifCalls_[0][1], o.output + ".partial-4711");
  EXPECT_EQ(sifCalls_[0][2], "amd64");
  EXPECT_EQ(readFileIfPresent(o.output).value_or(""), "SIF around hsqs and the rest");
  EXPECT_TRUE(stagingIsGone());
}

TEST_F(ImageBuildTest, BaseAndPackagesAreStagedFirst) {
  WrapOptions o = options();
  o.packages = {"busybox"};
  o.suite = "bookworm";
  build(o);
  ASSERT_EQ(runner_.calls.size(), 3u);
  EXPECT_EQ(runner_.calls[0].front(), "mmdebstrap");
  EXPECT_EQ(runner_.calls[1].front(), "cp");
  EXPECT_THAT(runner_.calls[1][4], HasSubstr("/root/opt/env"));
}

TEST_F(ImageBuildTest, AFailingToolLeavesNothingAndSaysWhy) {
  WrapOptions o = options();
  runner_.failures["mksquashfs"] = {1,
                                    "Parallel mksquashfs: Using 2 processors\n"
                                    "Write failed because No space left on device"};
  try {
    build(o);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(),
                 "wrap: mksquashfs failed (exit 1): Write failed because No space left on device");
  }
  EXPECT_THAT(err_.str(),
              HasSubstr("  mksquashfs| Write failed because No space left on device\n"));
  EXPECT_FALSE(fs::exists(o.output));
  EXPECT_FALSE(fs::exists(o.output + ".partial-4711"));
  EXPECT_TRUE(stagingIsGone());
}

TEST_F(ImageBuildTest, AFailingDebootstrapNamesAptsErrorAndTheInputs) {
  WrapOptions o = options();
  o.packages = {"nosuchpkg"};
  o.suite = "bookworm";
  runner_.failures["mmdebstrap"] = {25,
                                    "I: downloading packages with apt...\n"
                                    "E: Unable to locate package nosuchpkg\n"
                                    "E: apt download failed: E: apt-get --yes ... failed\n"
                                    "E: mmdebstrap failed to run"};
  try {
    build(o);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "wrap: mmdebstrap failed (exit 25): E: Unable to locate package nosuchpkg: "
                 "check the --apt package names, --suite bookworm and the apt sources "
                 "(--mirror)");
  }
  EXPECT_TRUE(stagingIsGone());
}

TEST_F(ImageBuildTest, QuietLeavesOutTheToolsOutput) {
  WrapOptions o = options();
  o.quiet = true;
  runner_.failures["cp"] = {1, "cp: cannot stat: Permission denied"};
  EXPECT_THROW(build(o), IoError);
  EXPECT_EQ(err_.str(), "");
}

TEST_F(ImageBuildTest, AnInterruptedToolLeavesTheOldImageAndNoPartial) {
  WrapOptions o = options();
  o.force = true;
  writeFile(o.output, "the old image");
  runner_.interruptIn = "mksquashfs";
  try {
    build(o);
    FAIL() << "not interrupted";
  } catch (const BuildInterrupted& e) {
    EXPECT_EQ(e.signal(), SIGINT);
  }
  EXPECT_EQ(readFileIfPresent(o.output).value_or(""), "the old image");
  EXPECT_FALSE(fs::exists(o.output + ".partial-4711"));
  EXPECT_TRUE(stagingIsGone());
}

// The signal arrives while the SIF is written: the image is not published.
TEST_F(ImageBuildTest, AnInterruptBetweenStepsStopsBeforeThePublish) {
  WrapOptions o = options();
  o.format = ImageFormat::kSif;
  o.output = at("env.sif");
  const std::string partial = o.output + ".partial-4711";
  BuildWorld world{.runner = runner_,
                   .interrupted = [&partial] { return fs::exists(partial) ? SIGTERM : 0; },
                   .err = err_,
                   .now = [] { return 0.0; },
                   .distrun = "/d",
                   .writeSif = [](const std::string&, const std::string& out,
                                  const SifOptions&) { writeFile(out, "SIF"); },
                   .pid = 4711};
  EXPECT_THROW(wrapImage(o, inputs_, world), BuildInterrupted);
  EXPECT_FALSE(fs::exists(o.output));
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_TRUE(stagingIsGone());
}

}  // namespace
}  // namespace distrun::container
