// distrun's SIF files and image checks against the real tools: a SquashFS
// made by mksquashfs, wrapped by writeSif, loaded by the reference SIF
// library (github.com/sylabs/sif/v2, compiled from Debian's Go sources by
// the test), mounted with squashfuse at the partition's offset and listed
// with unsquashfs; and an image the reference library wrote, read by
// openImage. Each test skips with the missing tool named.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/common/error.h"
#include "distrun/container/image_file.h"
#include "distrun/container/sif.h"
#include "distrun/testing/command.h"
#include "distrun/testing/container_tools.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::testing {
namespace {

namespace fs = std::filesystem;
using container::ImageFile;
using container::openImage;
using container::readSif;
using container::SifFile;

constexpr const char* kSifSource = "/usr/share/gocode/src/github.com/sylabs/sif/pkg/sif/sif.go";
constexpr const char* kHello = "hello from the image\n";

void spill(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

// Compiles testdata/sifcheck (offline, against Debian's Go sources) into
// the build folder once per version of its source; returns the binary, or
// "" with `skip` saying what is missing.
std::string sifCheckBinary(std::string& skip) {
  skip = containerToolsMissing({"go"});
  if (skip.empty() && !fs::exists(kSifSource)) {
    skip = std::string("needs ") + kSifSource +
           " (Debian package golang-github-sylabs-sif-dev; "
           "scripts/install-deps installs it)";
  }
  if (!skip.empty()) return "";
  std::string source = sourcePath("distrun/container/testdata/sifcheck");
  std::string main = slurp(source + "/main.go"), mod = slurp(source + "/go.mod");
  std::string dir = std::string(DISTRUN_BINARY_DIR) + "/sifcheck";
  std::string binary = fmt::format("{}/sifcheck-{:016x}", dir, fnv1a(main + '\0' + mod));
  if (fs::exists(binary)) return binary;
  // Built in a copy: -mod=mod may rewrite go.mod, which stays untouched in the tree.
  std::string work = fmt::format("{}/src-{}", dir, ::getpid());
  fs::create_directories(work);
  spill(work + "/main.go", main);
  spill(work + "/go.mod", mod);
  CommandResult built = runCommand(
      fmt::format("cd {} && GOENV=off GOWORK=off GOFLAGS=-mod=mod GOPROXY=off GOCACHE={}/gocache "
                  "GOPATH={}/gopath go build -o {}.tmp . && mv {}.tmp {}",
                  quote(work), quote(dir), quote(dir), quote(work + "/sifcheck"),
                  quote(work + "/sifcheck"), quote(binary)));
  fs::remove_all(work);
  if (built.exitCode != 0) skip = "building the SIF checker failed: " + built.out + built.err;
  return built.exitCode == 0 ? binary : "";
}

// A FUSE mount of a SquashFS at a byte offset of a file, undone at the end.
class SquashfuseMount {
 public:
  SquashfuseMount(const std::string& image, uint64_t offset, const std::string& dir) : dir_(dir) {
    fs::create_directories(dir);
    result_ =
        runCommand(fmt::format("squashfuse -o offset={} {} {}", offset, quote(image), quote(dir)));
    mounted_ = result_.exitCode == 0;
  }
  ~SquashfuseMount() { unmount(); }
  SquashfuseMount(const SquashfuseMount&) = delete;
  SquashfuseMount& operator=(const SquashfuseMount&) = delete;
  const CommandResult& result() const { return result_; }
  CommandResult unmount() {
    if (!mounted_) return {};
    mounted_ = false;
    return runCommand("fusermount3 -u " + quote(dir_));
  }

 private:
  std::string dir_;
  CommandResult result_;
  bool mounted_ = false;
};

bool mountedAt(const std::string& dir) {
  return slurp("/proc/self/mountinfo").find(" " + dir + " ") != std::string::npos;
}

// A small tree (a text file, a 300 KB file spanning several SquashFS
// blocks of 128 KiB, a nested file), squashed with zstd as distrun wrap does, and the
// same SquashFS wrapped into a SIF by writeSif.
class ContainerImage : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = containerToolsMissing({"mksquashfs"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    fs::create_directories(path("tree/sub/deep"));
    spill(path("tree/hello.txt"), kHello);
    uint32_t lcg = 1;  // incompressible enough that the file spans several SquashFS blocks
    for (int i = 0; i < 300000; ++i) {
      lcg = lcg * 1664525U + 1013904223U;
      big_.push_back(static_cast<char>(lcg >> 24));
    }
    spill(path("tree/sub/big.bin"), big_);
    spill(path("tree/sub/deep/leaf.txt"), "leaf\n");
    CommandResult made = runCommand(
        fmt::format("mksquashfs {} {} -comp zstd -noappend -quiet -no-progress -all-root",
                    quote(path("tree")), quote(path("root.squashfs"))));
    ASSERT_EQ(made.exitCode, 0) << made.out << made.err;
    container::SifOptions options;
    options.createdAt = 1700000000;
    container::writeSif(path("root.squashfs"), path("image.sif"), options);
  }
  std::string path(const std::string& name) const { return scratch_.path() + "/" + name; }

  ScratchDir scratch_{"image-test"};
  std::string big_;
};

TEST_F(ContainerImage, TheReferenceLibraryReadsWhatWriteSifWrote) {
  std::string skip;
  std::string sifcheck = sifCheckBinary(skip);
  if (sifcheck.empty()) GTEST_SKIP() << skip;
  CommandResult checked = runCommand(quote(sifcheck) + " " + quote(path("image.sif")));
  ASSERT_EQ(checked.exitCode, 0) << checked.err;
  std::cout << "sifcheck " << path("image.sif") << ":\n" << checked.out;
  nlohmann::json go = nlohmann::json::parse(checked.out);
  SifFile ours = readSif(path("image.sif"));
  ImageFile image = openImage(path("image.sif"));
  EXPECT_EQ(go["launchScript"], ours.header.launchScript);
  EXPECT_EQ(go["version"], "01");
  EXPECT_EQ(go["arch"], "amd64");
  EXPECT_EQ(go["id"], ours.header.id);
  EXPECT_EQ(go["createdAt"], 1700000000);
  EXPECT_EQ(go["descriptorsTotal"], 48);
  EXPECT_EQ(go["descriptorsFree"], 47);
  EXPECT_EQ(go["descriptorsOffset"], ours.header.descriptorsOffset);
  EXPECT_EQ(go["descriptorsSize"], ours.header.descriptorsSize);
  EXPECT_EQ(go["dataOffset"], ours.header.dataOffset);
  EXPECT_EQ(go["dataSize"], ours.header.dataSize);
  const nlohmann::json& part = go["primarySystemPartition"];
  EXPECT_EQ(part["id"], 1);
  EXPECT_EQ(part["groupId"], 1);
  EXPECT_EQ(part["offset"], image.rootOffset);
  EXPECT_EQ(part["size"], fs::file_size(path("root.squashfs")));
  EXPECT_EQ(part["fsName"], "Squashfs");
  EXPECT_EQ(part["partName"], "*System");
  EXPECT_EQ(part["arch"], image.arch);
}

TEST_F(ContainerImage, OpenImageFindsThePartitionOfAnImageTheReferenceLibraryWrote) {
  std::string skip;
  std::string sifcheck = sifCheckBinary(skip);
  if (sifcheck.empty()) GTEST_SKIP() << skip;
  CommandResult made = runCommand(fmt::format("{} -create {} {}", quote(sifcheck),
                                              quote(path("go.sif")), quote(path("root.squashfs"))));
  ASSERT_EQ(made.exitCode, 0) << made.err;
  nlohmann::json go =
      nlohmann::json::parse(runCommand(quote(sifcheck) + " " + quote(path("go.sif"))).out);
  ImageFile image = openImage(path("go.sif"));
  EXPECT_EQ(image.format, container::ImageFormat::kSif);
  EXPECT_EQ(go["primarySystemPartition"]["offset"], image.rootOffset);
  EXPECT_EQ(readSif(path("go.sif")).descriptors.size(), 3U);  // definition, JSON, partition
  EXPECT_EQ(image.rootSize, openImage(path("root.squashfs")).rootSize);
  EXPECT_EQ(image.arch, "amd64");
}

TEST_F(ContainerImage, TheReferenceLibraryRefusesWhatReadSifRefuses) {
  std::string skip;
  std::string sifcheck = sifCheckBinary(skip);
  if (sifcheck.empty()) GTEST_SKIP() << skip;
  fs::copy_file(path("image.sif"), path("version.sif"));
  std::fstream(path("version.sif"), std::ios::in | std::ios::out | std::ios::binary)
      .seekp(42)
      .write("02", 2);
  fs::copy_file(path("image.sif"), path("cut.sif"));
  fs::resize_file(path("cut.sif"), 10000);
  struct Case {
    std::string file, goSays, weSay;
  };
  for (const Case& c : {Case{"root.squashfs", "invalid SIF magic", "not a SIF file"},
                        Case{"version.sif", "incompatible SIF version", "SIF format version"},
                        Case{"cut.sif", "reading descriptors", "its SIF descriptor table ends"}}) {
    CommandResult go = runCommand(quote(sifcheck) + " " + quote(path(c.file)));
    EXPECT_EQ(go.exitCode, 1) << c.file;
    EXPECT_NE(go.err.find(c.goSays), std::string::npos) << go.err;
    try {
      readSif(path(c.file));
      ADD_FAILURE() << c.file << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.exitCode(), ExitCode::kData);
      EXPECT_NE(std::string(e.what()).find(c.weSay), std::string::npos) << e.what();
    }
  }
}

TEST_F(ContainerImage, SquashfuseMountsTheSifPartitionAtItsOffset) {
  std::string missing = containerToolsMissing({"squashfuse", "fusermount3"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  ImageFile image = openImage(path("image.sif"));
  ASSERT_EQ(image.rootOffset, 32768U);
  std::string mnt = path("mnt");
  SquashfuseMount mount(path("image.sif"), image.rootOffset, mnt);
  ASSERT_EQ(mount.result().exitCode, 0) << mount.result().err;
  EXPECT_EQ(slurp(mnt + "/hello.txt"), kHello);
  EXPECT_EQ(slurp(mnt + "/sub/big.bin"), big_);
  EXPECT_EQ(slurp(mnt + "/sub/deep/leaf.txt"), "leaf\n");
  CommandResult unmounted = mount.unmount();
  EXPECT_EQ(unmounted.exitCode, 0) << unmounted.err;
  EXPECT_FALSE(mountedAt(mnt));
}

TEST_F(ContainerImage, UnsquashfsListsTheSifPartitionAtItsOffset) {
  std::string missing = containerToolsMissing({"unsquashfs"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  ImageFile image = openImage(path("image.sif"));
  CommandResult listed =
      runCommand(fmt::format("unsquashfs -o {} -l {}", image.rootOffset, quote(path("image.sif"))));
  ASSERT_EQ(listed.exitCode, 0) << listed.err;
  std::vector<std::string> files = lines(listed.out);
  for (const char* file : {"squashfs-root/hello.txt", "squashfs-root/sub/big.bin",
                           "squashfs-root/sub/deep/leaf.txt"}) {
    EXPECT_NE(std::find(files.begin(), files.end(), file), files.end()) << listed.out;
  }
}

TEST_F(ContainerImage, ABareSquashfsOpensAtOffsetZero) {
  ImageFile image = openImage(path("root.squashfs"));
  EXPECT_EQ(image.format, container::ImageFormat::kSquashfs);
  EXPECT_EQ(image.rootOffset, 0U);
  EXPECT_GT(image.rootSize, 96U);
  EXPECT_LE(image.rootSize, fs::file_size(path("root.squashfs")));
}

// The real images, broken: each refusal has its own code and message.
TEST_F(ContainerImage, BrokenRealImagesGetTheirOwnCodeAndMessage) {
  uint64_t used = openImage(path("root.squashfs")).rootSize;
  fs::copy_file(path("root.squashfs"), path("half.squashfs"));
  fs::resize_file(path("half.squashfs"), used / 2);
  fs::copy_file(path("image.sif"), path("half.sif"));
  fs::resize_file(path("half.sif"), 32768 + used / 2);
  spill(path("notes.txt"), "not an image, but text long enough to hold a header or two\n");
  struct Case {
    std::string file;
    ExitCode code;
    std::string says;
  };
  for (const Case& c :
       {Case{"gone.sif", ExitCode::kNoInput, ": cannot open: No such file"},
        Case{"notes.txt", ExitCode::kData, ": neither a SIF file nor a SquashFS"},
        Case{"half.squashfs", ExitCode::kData,
             fmt::format(": truncated: its SquashFS file system needs {} bytes", used)},
        Case{"half.sif", ExitCode::kData, ": truncated: its SIF object 1 is "}}) {
    try {
      openImage(path(c.file));
      ADD_FAILURE() << c.file << " was opened";
    } catch (const container::ImageError& e) {
      EXPECT_EQ(e.exitCode(), c.code) << e.what();
      std::string prefix = "container image " + path(c.file) + c.says;
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0U) << e.what();
    }
  }
}

}  // namespace
}  // namespace distrun::testing
