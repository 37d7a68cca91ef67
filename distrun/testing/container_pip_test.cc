// `distrun wrap --pip` for real (label container): an image from Debian's
// python3 and python3-venv with six from PyPI and a package only a
// wheelhouse has (testdata/make_wheel.py), built once and cached outside
// the clone (cachedImage); an update of it with --base offline
// (--find-links, --no-index) and its wrappers from a host shell and under
// `distrun run`; pip's failures as one line with exit 65 and nothing
// written. PyPI must be reachable (it is in CI).
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/container/image_file.h"
#include "distrun/testing/command.h"
#include "distrun/testing/container_tools.h"

namespace distrun::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// `unsquashfs ARGS` on the image's file system (at its offset in the SIF).
CommandResult unsquashfs(const std::string& image, const std::string& flag,
                         const std::string& file = "") {
  const uint64_t offset = container::openImage(image).rootOffset;
  return runCommand(fmt::format("unsquashfs -o {} {} {} {}", offset, flag, quote(image), file));
}

std::string distrun() { return quote(binaryPath("distrun")); }

std::string wrapLine(const std::vector<std::string>& args) {
  std::string command = distrun() + " wrap";
  for (const std::string& a : args) command += " " + quote(a);
  return command;
}

// Two wheels no index has, made once per machine.
std::string wheelhouse() {
  const char* dir = std::getenv("DISTRUN_TEST_CACHE");
  const std::string root = dir != nullptr && *dir != '\0' ? dir : "/var/tmp/distrun-test-cache";
  const std::string wheels = root + "/wheelhouse-v1";
  for (const auto& [name, version] : {std::pair{"hello-distrun", "1.0"}, {"hello-two", "2.0"}}) {
    std::string module = name;
    std::replace(module.begin(), module.end(), '-', '_');
    const std::string wheel = fmt::format("{}/{}-{}-py3-none-any.whl", wheels, module, version);
    if (fs::exists(wheel)) continue;
    CommandResult r = runCommand(fmt::format(
        "/usr/bin/python3 {} {} {} {} 2>&1",
        quote(sourcePath("distrun/testing/testdata/make_wheel.py")), name, version, quote(wheels)));
    EXPECT_EQ(r.exitCode, 0) << r.out;
  }
  return wheels;
}

class ContainerPipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing =
        containerToolsMissing({"mmdebstrap", "mksquashfs", "unsquashfs", "bwrap"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 missing: make_wheel.py";
  }

  std::string at(const std::string& relative) { return scratch_.path() + "/" + relative; }

  // The issue's image: --apt python3,python3-venv, a PyPI package and a
  // wheelhouse one.
  static std::string pipImage() {
    return cachedImage({"--apt", "python3,python3-venv", "--pip", "six==1.16.0", "--pip",
                        "hello-distrun", "--find-links", wheelhouse()});
  }

  ScratchDir scratch_{"container-pip"};
};

TEST_F(ContainerPipTest, AnAptImageWithPackagesFromPyPIAndAWheelhouseListsThem) {
  const std::string image = pipImage();
  ASSERT_FALSE(image.empty());
  CommandResult list = runCommand(distrun() + " wrap --list " + quote(image));
  EXPECT_EQ(list.exitCode, 0) << list.err;
  EXPECT_EQ(list.out, fmt::format("# {}: built by distrun wrap\n"
                                  "# --apt python3,python3-venv\n"
                                  "# /opt/env (pip freeze):\n"
                                  "hello-distrun==1.0\n"
                                  "six==1.16.0\n",
                                  image));
  // Apptainer's `inspect --labels` reads the same file.
  CommandResult labels = unsquashfs(image, "-cat", "/.singularity.d/labels.json");
  EXPECT_THAT(labels.out,
              HasSubstr(R"("org.distrun.wrap.pip-freeze": "hello-distrun==1.0\nsix==1.16.0\n")"));
  // pip's cache and temporary files stayed out of the image.
  CommandResult listing = unsquashfs(image, "-lln");
  EXPECT_THAT(listing.out, HasSubstr("squashfs-root/opt/env/bin/python"));
  EXPECT_THAT(listing.out, ::testing::Not(HasSubstr(".pip-cache")));
  EXPECT_THAT(listing.out, ::testing::Not(HasSubstr("squashfs-root/root/.cache")));
}

TEST_F(ContainerPipTest, AnUpdateAddsToTheEnvironmentOfflineAndItsWrappersRun) {
  const std::string base = pipImage();
  ASSERT_FALSE(base.empty());
  const std::string image = at("env.sif");
  CommandResult r =
      runCommand(wrapLine({"-o", image, "--base", base, "--pip", "hello-two==2.0", "--find-links",
                           wheelhouse(), "--no-index", "--wrappers", at("wrapped")}));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("distrun wrap: venv: adding to the image's /opt/env\n"));
  EXPECT_THAT(r.err, HasSubstr("distrun wrap: pip: starting\n"));
  EXPECT_THAT(r.err, HasSubstr(", pip "));  // the report's time of pip
  CommandResult list = runCommand(distrun() + " wrap --list " + quote(image));
  EXPECT_THAT(list.out, HasSubstr("hello-distrun==1.0\nhello-two==2.0\nsix==1.16.0\n"));

  // From a host shell: the wrapper's python is the environment's.
  const std::string check =
      "import sys, six, hello_distrun, hello_two; "
      "print(sys.prefix, six.__version__, hello_two.greeting())";
  CommandResult shell = runCommand(quote(at("wrapped/bin/python")) + " -c " + quote(check));
  EXPECT_EQ(shell.exitCode, 0) << shell.err;
  EXPECT_EQ(shell.out, "/opt/env 1.16.0 hello-two 2.0 from a wheelhouse\n");

  // Under distrun run, with the wrappers first on PATH as the LUMI
  // wrapper's users have them.
  std::ofstream(at("ranks.py")) << "import os, sys, six\n"
                                   "print(os.environ['RANK'], sys.prefix, six.__version__)\n";
  CommandResult run =
      runCommand(fmt::format("cd {} && PATH={}:$PATH {} run --nproc-per-node 2 ranks.py",
                             quote(scratch_.path()), quote(at("wrapped/bin")), distrun()));
  EXPECT_EQ(run.exitCode, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("[0:0] 0 /opt/env 1.16.0\n"));
  EXPECT_THAT(run.out, HasSubstr("[0:1] 1 /opt/env 1.16.0\n"));
}

TEST_F(ContainerPipTest, ARequirementPyPIDoesNotHaveIsOneLineAndNothingIsWritten) {
  const std::string base = pipImage();
  ASSERT_FALSE(base.empty());
  fs::create_directories(at("tmp"));
  const std::string image = at("bad.sif");
  CommandResult r = runCommand(wrapLine({"-o", image, "--base", base, "--pip",
                                         "no-such-package-distrun-xyz", "--tmpdir", at("tmp")}));
  EXPECT_EQ(r.exitCode, 65);
  EXPECT_THAT(r.err, ::testing::EndsWith(
                         "distrun: error: wrap: pip install failed (exit 1): Could not find a "
                         "version that satisfies the requirement no-such-package-distrun-xyz "
                         "(from versions: none)\n"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("Traceback")));
  EXPECT_FALSE(fs::exists(image));
  EXPECT_TRUE(fs::is_empty(at("tmp")));  // the staging folder went
  for (const auto& entry : fs::directory_iterator(scratch_.path())) {
    EXPECT_EQ(entry.path().string().find(".partial-"), std::string::npos) << entry.path();
  }
}

TEST_F(ContainerPipTest, AVersionPyPIDoesNotHaveIsOneLineNamingTheVersionsItHas) {
  const std::string base = pipImage();
  ASSERT_FALSE(base.empty());
  const std::string image = at("bad.sif");
  CommandResult r = runCommand(wrapLine({"-o", image, "--base", base, "--pip", "six==99.0"}));
  EXPECT_EQ(r.exitCode, 65);
  EXPECT_THAT(r.err,
              HasSubstr("distrun: error: wrap: pip install failed (exit 1): Could not find "
                        "a version that satisfies the requirement six==99.0 (from versions: "));
  EXPECT_THAT(r.err, HasSubstr("1.16.0"));
  EXPECT_FALSE(fs::exists(image));
}

}  // namespace
}  // namespace distrun::testing
