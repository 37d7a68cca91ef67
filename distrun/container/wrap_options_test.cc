#include "distrun/container/wrap_options.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/testing/container_tools.h"

namespace distrun::container {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

WrapOptions parse(WrapArguments args, const std::string& hostSuite = "bookworm") {
  if (args.output.empty()) args.output = "/images/out.sif";
  return parseWrapArguments(args, hostSuite, MapEnvironment{});
}

// The UsageError parse throws for `args`.
std::string usageMessage(WrapArguments args, const std::string& hostSuite = "bookworm") {
  try {
    parse(std::move(args), hostSuite);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(WrapArgumentsTest, PackagesFromEveryAptFlagInOrder) {
  WrapOptions o = parse({.apt = {"python3-torch,python3-numpy", "busybox"}});
  EXPECT_EQ(o.packages, (std::vector<std::string>{"python3-torch", "python3-numpy", "busybox"}));
  EXPECT_EQ(o.suite, "bookworm");
  EXPECT_EQ(o.variant, "essential");
  EXPECT_EQ(o.format, ImageFormat::kSif);
}

TEST(WrapArgumentsTest, AGivenSuiteWinsOverTheHosts) {
  EXPECT_EQ(parse({.apt = {"busybox"}, .suite = "trixie"}).suite, "trixie");
}

TEST(WrapArgumentsTest, AptWithoutAnyReleaseToTakeIsRefused) {
  EXPECT_EQ(usageMessage({.apt = {"busybox"}}, ""),
            "--apt: this host's /etc/os-release names no Debian release (VERSION_CODENAME): give "
            "one with --suite (--suite bookworm)");
  EXPECT_EQ(parse({.dirs = {"/x:/y"}}, "").suite, "");  // no packages: no suite needed
}

TEST(WrapArgumentsTest, DirsAreAbsoluteAndNormal) {
  WrapOptions o = parse({.dirs = {"venv/:/opt/env/", "/data/./proj:/opt//proj"}});
  ASSERT_EQ(o.dirs.size(), 2u);
  EXPECT_EQ(o.dirs[0].source, (fs::current_path() / "venv").string());
  EXPECT_EQ(o.dirs[0].destination, "/opt/env");
  EXPECT_EQ(o.dirs[1].source, "/data/proj");
  EXPECT_EQ(o.dirs[1].destination, "/opt/proj");
}

TEST(WrapArgumentsTest, OutputBaseWrappersAndTmpdirAreMadeAbsolute) {
  WrapOptions o = parse({.output = "out.sif", .base = "b.sif", .wrappers = "w", .tmpdir = "t"});
  EXPECT_EQ(o.output, (fs::current_path() / "out.sif").string());
  EXPECT_EQ(o.base, (fs::current_path() / "b.sif").string());
  EXPECT_EQ(o.wrappers, (fs::current_path() / "w").string());
  EXPECT_EQ(o.tmpdir, (fs::current_path() / "t").string());
}

TEST(WrapArgumentsTest, StagingIsTmpdirElseTmpdirVariableElseTmp) {
  EXPECT_EQ(stagingParent("/scratch", MapEnvironment{{"TMPDIR", "/local"}}), "/scratch");
  EXPECT_EQ(stagingParent("", MapEnvironment{{"TMPDIR", "/local/"}}), "/local");
  EXPECT_EQ(stagingParent("", MapEnvironment{}), "/tmp");
  EXPECT_EQ(stagingParent("", MapEnvironment{{"TMPDIR", ""}}), "/tmp");
}

TEST(WrapArgumentsTest, EnvironmentAndPaths) {
  WrapOptions o = parse({.dirs = {"/a:/b"},
                         .env = {"OMP_NUM_THREADS=8", "EMPTY=", "EQ=a=b"},
                         .paths = {"/opt/env/bin"}});
  EXPECT_EQ(o.env, (std::vector<std::pair<std::string, std::string>>{
                       {"OMP_NUM_THREADS", "8"}, {"EMPTY", ""}, {"EQ", "a=b"}}));
  EXPECT_EQ(o.paths, std::vector<std::string>{"/opt/env/bin"});
}

TEST(WrapArgumentsTest, SquashfsFormat) {
  EXPECT_EQ(parse({.format = "squashfs", .dirs = {"/a:/b"}}).format, ImageFormat::kSquashfs);
}

TEST(WrapArgumentsTest, CompressionIsMksquashfssFlags) {
  using Flags = std::vector<std::string>;
  EXPECT_EQ(parse({.dirs = {"/a:/b"}}).compression,
            (Flags{"-comp", "zstd", "-Xcompression-level", "3"}));
  EXPECT_EQ(parse({.compression = "zstd:19", .dirs = {"/a:/b"}}).compression,
            (Flags{"-comp", "zstd", "-Xcompression-level", "19"}));
  EXPECT_EQ(parse({.compression = "lz4", .dirs = {"/a:/b"}}).compression, (Flags{"-comp", "lz4"}));
  EXPECT_EQ(parse({.compression = "gzip", .dirs = {"/a:/b"}}).compression,
            (Flags{"-comp", "gzip"}));
  EXPECT_EQ(parse({.compression = "none", .dirs = {"/a:/b"}}).compression,
            (Flags{"-noI", "-noD", "-noF", "-noX"}));
}

TEST(WrapArgumentsMistakeTest, EachIsNamed) {
  EXPECT_EQ(usageMessage({.compression = "brotli", .dirs = {"/a:/b"}}),
            "--compression brotli: expected zstd[:LEVEL], gzip[:LEVEL], xz, lz4 or none");
  EXPECT_EQ(usageMessage({.compression = "zstd:30", .dirs = {"/a:/b"}}),
            "--compression zstd:30: zstd takes a level from 1 to 22");
  EXPECT_EQ(usageMessage({.compression = "lz4:9", .dirs = {"/a:/b"}}),
            "--compression lz4:9: lz4 takes no level");
  EXPECT_EQ(usageMessage({}),
            "wrap: nothing to put in the image: give --apt PKG[,PKG...], --dir SRC:DEST or "
            "--base IMAGE (see 'distrun wrap --help')");
  EXPECT_THAT(usageMessage({.apt = {"busybox"}, .base = "b.sif"}),
              HasSubstr("--apt with --base b.sif: distrun wraps packages into a new Debian "
                        "system only"));
  EXPECT_EQ(usageMessage({.dirs = {"venv"}}),
            "--dir venv: expected SRC:DEST, a host folder and where it goes in the image (--dir "
            "./venv:/opt/env)");
  EXPECT_THAT(usageMessage({.dirs = {":/opt"}}), HasSubstr("expected SRC:DEST"));
  EXPECT_THAT(usageMessage({.dirs = {"venv:"}}), HasSubstr("expected SRC:DEST"));
  EXPECT_EQ(usageMessage({.dirs = {"venv:opt/env"}}),
            "--dir venv:opt/env: DEST opt/env must be an absolute path inside the image "
            "(/opt/env)");
  EXPECT_EQ(usageMessage({.format = "zip", .dirs = {"/a:/b"}}),
            "--format zip: expected sif or squashfs");
  EXPECT_THAT(usageMessage({.apt = {"busybox"}, .variant = "tiny"}),
              HasSubstr("--variant tiny: expected one of extract, custom, essential"));
  EXPECT_EQ(usageMessage({.apt = {"busybox,,python3"}}),
            "--apt busybox,,python3: expected Debian package names separated by commas (--apt "
            "python3-torch,python3-numpy)");
  EXPECT_EQ(usageMessage({.dirs = {"/a:/b"}, .env = {"1X=2"}}),
            "--env 1X=2: expected NAME=VALUE with NAME made of letters, digits and _ (--env "
            "OMP_NUM_THREADS=8)");
  EXPECT_THAT(usageMessage({.dirs = {"/a:/b"}, .env = {"NOVALUE"}}), HasSubstr("--env NOVALUE"));
  EXPECT_EQ(usageMessage({.dirs = {"/a:/b"}, .paths = {"bin"}}),
            "--path bin: DIR must be an absolute path inside the image (/opt/env)");
  EXPECT_THAT(usageMessage({.dirs = {"/a:/b"}, .wrapPaths = {"bin"}}),
              HasSubstr("--wrap-path bin: DIR must be an absolute path"));
}

TEST(WrapArgumentsMistakeTest, OutputIsRequired) {
  WrapArguments args{.dirs = {"/a:/b"}};
  EXPECT_THROW(
      {
        try {
          parseWrapArguments(args, "bookworm", MapEnvironment{});
        } catch (const UsageError& e) {
          EXPECT_STREQ(e.what(),
                       "wrap: -o IMAGE is required: the image file to write (-o "
                       "env.sif)");
          throw;
        }
      },
      UsageError);
}

// The file-system checks, in a scratch folder.
class WrapInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(scratch_.path().empty());
    fs::create_directories(dir("src/bin"));
    fs::create_directories(dir("tmp"));
    fs::create_directories(dir("tools"));
    for (const char* tool : {"mmdebstrap", "unsquashfs", "cp", "mksquashfs"}) {
      std::ofstream(dir("tools/") + tool) << "#!/bin/sh\n";
      ::chmod((dir("tools/") + tool).c_str(), 0755);
    }
    env_.set("PATH", dir("tools"));
  }

  std::string dir(const std::string& relative) { return scratch_.path() + "/" + relative; }

  WrapOptions options() {
    WrapArguments args{
        .output = dir("out.sif"), .dirs = {dir("src") + ":/opt/src"}, .tmpdir = dir("tmp")};
    return parseWrapArguments(args, "bookworm", env_);
  }

  // The error checkWrapInputs throws for `o`: "CODE: MESSAGE".
  std::string refusal(const WrapOptions& o) {
    try {
      checkWrapInputs(o, env_);
    } catch (const Error& e) {
      return std::to_string(toInt(e.exitCode())) + ": " + e.what();
    }
    return "(no error)";
  }

  distrun::testing::ScratchDir scratch_{"wrap-options"};
  MapEnvironment env_;
};

TEST_F(WrapInputsTest, GoodInputsPass) { EXPECT_EQ(refusal(options()), "(no error)"); }

TEST_F(WrapInputsTest, AMissingDirSourceIsNoInput) {
  WrapOptions o = options();
  o.dirs[0].source = dir("nope");
  EXPECT_EQ(refusal(o), "66: --dir " + dir("nope") + ":/opt/src: " + dir("nope") +
                            " does not exist: give a folder on this host");
}

TEST_F(WrapInputsTest, ADirSourceThatIsAFileIsRefused) {
  std::ofstream(dir("file")) << "x";
  WrapOptions o = options();
  o.dirs[0].source = dir("file");
  EXPECT_THAT(refusal(o), HasSubstr("64: --dir " + dir("file") + ":/opt/src: " + dir("file") +
                                    " is not a folder"));
}

TEST_F(WrapInputsTest, TheOutputsFolderMustExist) {
  WrapOptions o = options();
  o.output = dir("missing/out.sif");
  EXPECT_EQ(refusal(o), "74: -o " + o.output + ": the folder " + dir("missing") +
                            " does not exist: create it, or choose another path");
}

TEST_F(WrapInputsTest, AnExistingOutputNeedsForce) {
  std::ofstream(dir("out.sif")) << "old";
  WrapOptions o = options();
  EXPECT_EQ(refusal(o), "64: -o " + o.output +
                            ": the file exists: add --force to replace it, or choose another "
                            "name");
  o.force = true;
  EXPECT_EQ(refusal(o), "(no error)");
}

TEST_F(WrapInputsTest, ABadBaseIsOpenImagesError) {
  WrapOptions o = options();
  o.base = dir("missing.sif");
  EXPECT_THAT(refusal(o), HasSubstr("66: container image " + o.base + ": cannot open"));
  std::ofstream(dir("text.sif")) << "not an image at all, not even close to one";
  o.base = dir("text.sif");
  EXPECT_THAT(refusal(o), HasSubstr("65: container image " + o.base +
                                    ": neither a SIF file nor a SquashFS file system"));
}

TEST_F(WrapInputsTest, WrappersNeedAFolderToGoIn) {
  WrapOptions o = options();
  o.wrappers = dir("new/prefix");
  EXPECT_EQ(refusal(o), "74: --wrappers " + o.wrappers + ": the folder " + dir("new") +
                            " does not exist or cannot be written: create it, or choose another "
                            "prefix");
  o.wrappers = dir("prefix");  // its folder exists: made by the build
  EXPECT_EQ(refusal(o), "(no error)");
  std::ofstream(dir("file")) << "x";
  o.wrappers = dir("file");
  EXPECT_EQ(refusal(o), "74: --wrappers " + o.wrappers + ": " + o.wrappers +
                            " is not a folder distrun can write in: choose another prefix");
}

TEST_F(WrapInputsTest, TheStagingFolderMustExistOutsideTheDirs) {
  WrapOptions o = options();
  o.tmpdir = dir("none");
  EXPECT_EQ(refusal(o), "74: staging folder " + o.tmpdir +
                            " (--tmpdir, else $TMPDIR, else /tmp): not a folder distrun can "
                            "write in: create it, or choose another with --tmpdir");
  o.tmpdir = dir("src/bin");
  EXPECT_EQ(refusal(o), "64: staging folder " + o.tmpdir +
                            " (--tmpdir, else $TMPDIR, else /tmp): it is inside --dir " +
                            dir("src") +
                            ":/opt/src, which would copy the image into itself: choose another "
                            "with --tmpdir");
}

TEST_F(WrapInputsTest, AMissingToolIsNotFoundWithItsPackage) {
  fs::remove(dir("tools/mksquashfs"));
  EXPECT_EQ(refusal(options()),
            "127: wrap: mksquashfs not found on PATH: install the Debian package squashfs-tools "
            "(scripts/install-deps does)");
}

TEST_F(WrapInputsTest, ToolsNeededFollowTheSources) {
  WrapOptions o = options();
  using Tools = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(toolsNeeded(o), (Tools{{"cp", "coreutils"}, {"mksquashfs", "squashfs-tools"}}));
  o.packages = {"busybox"};
  o.base = "/b.sif";
  EXPECT_EQ(toolsNeeded(o), (Tools{{"mmdebstrap", "mmdebstrap"},
                                   {"unsquashfs", "squashfs-tools"},
                                   {"cp", "coreutils"},
                                   {"mksquashfs", "squashfs-tools"}}));
}

TEST_F(WrapInputsTest, AptNeedsRoot) {
  WrapOptions o = options();
  EXPECT_NO_THROW(checkAptPrivileges(o, 1000));  // no packages
  o.packages = {"busybox"};
  EXPECT_NO_THROW(checkAptPrivileges(o, 0));
  try {
    checkAptPrivileges(o, 1000);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "--apt: mmdebstrap makes a Debian tree with the right owners only as root (this "
                 "is uid 1000): run distrun wrap --apt as root, or build the packages' image once "
                 "as root and add your files with --base IMAGE --dir SRC:DEST");
  }
}

TEST_F(WrapInputsTest, TooLittleSpaceSaysHowMuchIsNeededAndFree) {
  try {
    checkStagingSpace(options(), uint64_t{1} << 62);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(), HasSubstr("staging folder " + dir("tmp") +
                                    " (--tmpdir, else $TMPDIR, else /tmp): has "));
    EXPECT_THAT(e.what(), HasSubstr(" free, staging the image's files needs at least "
                                    "4398046511104.0 MiB: free some space, or choose another "
                                    "folder with --tmpdir"));
  }
  EXPECT_NO_THROW(checkStagingSpace(options(), 1));
}

}  // namespace
}  // namespace distrun::container
