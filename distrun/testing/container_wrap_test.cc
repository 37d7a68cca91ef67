// `distrun wrap` for real (label container): build/bin/distrun runs
// mmdebstrap, cp and mksquashfs; the images are read back with unsquashfs
// and distrun's own image reader. Skipped with the reason when a tool is
// missing. The --base test starts from an image of Debian's busybox kept
// in /var/tmp/distrun-test-cache (keyed by what built it), so each test
// process does not run mmdebstrap again.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/strings.h"
#include "distrun/container/image_file.h"
#include "distrun/container/staging_tree.h"
#include "distrun/testing/command.h"
#include "distrun/testing/container_tools.h"

namespace distrun::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr int kStartSeconds = 180;  // mmdebstrap's download on a cold mirror
const char* const kCacheRoot = "/var/tmp/distrun-test-cache";

std::string wrapCommand(const std::vector<std::string>& args) {
  std::string command = quote(binaryPath("distrun")) + " wrap";
  for (const std::string& a : args) command += " " + quote(a);
  return command;
}

CommandResult wrap(const std::vector<std::string>& args) { return runCommand(wrapCommand(args)); }

// `unsquashfs -lln` of the image's SquashFS (at its offset in a SIF).
std::string listing(const std::string& image) {
  const container::ImageFile file = container::openImage(image);
  return runCommand("unsquashfs -lln -o " + std::to_string(file.rootOffset) + " " + quote(image))
      .out;
}

bool lists(const std::string& listingText, const std::string& pathInImage) {
  for (const std::string& line : lines(listingText)) {
    const size_t at = line.find(" squashfs-root" + pathInImage);
    if (at == std::string::npos) continue;
    const size_t end = at + 14 + pathInImage.size();
    if (end == line.size() || line.compare(end, 4, " -> ") == 0) return true;
  }
  return false;
}

// Why the build could not reach a Debian mirror, or "".
std::string offlineReason(const CommandResult& r) {
  for (const char* sign : {"Temporary failure resolving", "Failed to fetch", "Could not resolve"}) {
    if (r.err.find(sign) != std::string::npos) return "no Debian mirror reachable: " + r.err;
  }
  return "";
}

void writeTree(const std::string& root) {
  fs::create_directories(root + "/bin");
  fs::create_directories(root + "/lib/deep/er");
  std::ofstream(root + "/bin/hello") << "#!/bin/sh\necho hello\n";
  ::chmod((root + "/bin/hello").c_str(), 0755);
  fs::create_symlink("hello", root + "/bin/hi");
  std::ofstream(root + "/lib/deep/er/data.txt") << "data\n";
}

// Pids whose command line mentions `text` (the build's own staging path).
std::vector<int> processesMentioning(const std::string& text) {
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = slurp(entry.path().string() + "/cmdline");
    if (cmdline.find(text) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

bool waitFor(const std::function<bool()>& condition, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (condition()) return true;
    ::usleep(100000);
  }
  return false;
}

class ContainerWrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = containerToolsMissing({"mmdebstrap", "mksquashfs", "unsquashfs"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    ASSERT_FALSE(scratch_.path().empty());
    fs::create_directories(at("tmp"));
    writeTree(at("proj"));
  }

  std::string at(const std::string& relative) { return scratch_.path() + "/" + relative; }

  // The image of Debian's busybox (extract variant), built once per key.
  std::string cachedBusyboxImage() {
    const std::string key = fmt::format("{:016x}", fnv1a("busybox|extract|squashfs|v1"));
    const std::string image = std::string(kCacheRoot) + "/" + key + "/busybox.sqfs";
    if (fs::exists(image)) return image;
    fs::create_directories(fs::path(image).parent_path());
    CommandResult r = wrap({"-o", image, "--format", "squashfs", "--apt", "busybox", "--variant",
                            "extract", "-q", "--force"});
    if (r.exitCode != 0) {
      std::string offline = offlineReason(r);
      if (!offline.empty()) return "skip:" + offline;
      ADD_FAILURE() << r.err;
    }
    return image;
  }

  ScratchDir scratch_{"container-wrap"};
};

// The default format: SIF, its partition where openImage finds it.
TEST_F(ContainerWrapTest, AnImageFromPackagesAndADir) {
  const std::string image = at("busybox.sif");
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = wrap({"-o", image, "--apt", "busybox", "--variant", "extract", "--dir",
                          at("proj") + ":/opt/proj", "--env", "A=one two", "--path",
                          "/opt/proj/bin", "--wrappers", at("wrapped"), "--tmpdir", at("tmp")});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!offlineReason(r).empty()) GTEST_SKIP() << offlineReason(r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  RecordProperty("build_seconds", fmt::format("{:.1f}", seconds));
  std::cout << "distrun wrap --apt busybox --variant extract --dir: " << seconds << " s, "
            << fs::file_size(image) << " bytes\n"
            << r.err;
  EXPECT_THAT(r.err, HasSubstr("distrun wrap: before: "));
  EXPECT_THAT(r.err, HasSubstr("distrun wrap: after: 1 file, " + image + " (SIF)"));
  const container::ImageFile file = container::openImage(image);
  EXPECT_EQ(file.format, container::ImageFormat::kSif);
  EXPECT_EQ(file.arch, "amd64");
  EXPECT_GT(file.rootOffset, 0u);
  EXPECT_THAT(r.err, HasSubstr("distrun wrap: wrappers: 2 programs in " + at("wrapped/bin")));
  const std::string files = listing(image);
  for (const char* path :
       {"/bin/busybox", "/opt/proj/bin/hello", "/opt/proj/bin/hi", "/opt/proj/lib/deep/er/data.txt",
        "/proc", "/sys", "/dev", "/tmp", "/home", "/.singularity.d/env/90-distrun.sh",
        "/.singularity.d/actions/exec", "/etc/resolv.conf"}) {
    EXPECT_TRUE(lists(files, path)) << path << " is not in the image:\n" << files;
  }
  EXPECT_THAT(files, HasSubstr("squashfs-root/opt/proj/bin/hi -> hello"));  // the link kept
  const std::string cat =
      "unsquashfs -o " + std::to_string(file.rootOffset) + " -cat " + quote(image) + " ";
  EXPECT_EQ(runCommand(cat + "etc/resolv.conf").out, "");
  EXPECT_THAT(runCommand(cat + ".singularity.d/env/90-distrun.sh").out,
              HasSubstr("export A='one two'\nPATH=/opt/proj/bin\"${PATH:+:$PATH}\"\n"));
  for (const char* name : {"hello", "hi"}) {
    const std::string wrapper = at("wrapped/bin/") + name;
    EXPECT_EQ(::access(wrapper.c_str(), X_OK), 0) << wrapper;
    EXPECT_THAT(slurp(wrapper), HasSubstr(quote(binaryPath("distrun")) + " enter " +
                                          shellQuote(image) + " -- /opt/proj/bin/" + name));
  }
  EXPECT_TRUE(fs::is_empty(at("tmp"))) << "the staging folder was left";
}

TEST_F(ContainerWrapTest, AnImageOnABaseImagePlusADir) {
  const std::string base = cachedBusyboxImage();
  if (base.rfind("skip:", 0) == 0) GTEST_SKIP() << base.substr(5);
  const std::string image = at("more.sqfs");
  CommandResult r = wrap({"-o", image, "--format", "squashfs", "--base", base, "--dir",
                          at("proj") + ":/opt/more", "--env", "B=2", "--tmpdir", at("tmp")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::cout << r.err;
  const std::string files = listing(image);
  EXPECT_TRUE(lists(files, "/bin/busybox")) << files;
  EXPECT_TRUE(lists(files, "/opt/more/lib/deep/er/data.txt")) << files;
  EXPECT_THAT(r.err, HasSubstr("unsquashfs "));  // its time in the report
  EXPECT_TRUE(fs::is_empty(at("tmp")));
}

// A SIF as the base: unpacked from its partition's offset.
TEST_F(ContainerWrapTest, ASifBaseIsUnpackedFromItsPartition) {
  const std::string base = at("proj.sif");
  CommandResult r =
      wrap({"-o", base, "--dir", at("proj") + ":/opt/proj", "--env", "A=1", "--tmpdir", at("tmp")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(::access(base.c_str(), X_OK), 0) << "a SIF runs as ./image.sif where Apptainer is";
  const std::string image = at("on-proj.sif");
  r = wrap({"-o", image, "--base", base, "--dir", at("proj") + ":/srv/again", "--env", "B=2",
            "--tmpdir", at("tmp"), "-q"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err, "");  // -q
  const std::string files = listing(image);
  EXPECT_TRUE(lists(files, "/opt/proj/bin/hello")) << files;
  EXPECT_TRUE(lists(files, "/srv/again/bin/hello")) << files;
  const container::ImageFile file = container::openImage(image);
  // The base's environment is kept, the new lines come after it.
  EXPECT_THAT(runCommand("unsquashfs -o " + std::to_string(file.rootOffset) + " -cat " +
                         quote(image) + " .singularity.d/env/90-distrun.sh")
                  .out,
              HasSubstr("export A=1\nexport B=2\n"));
  EXPECT_TRUE(fs::is_empty(at("tmp")));
}

// A real signal while mmdebstrap has the tree's /proc and /dev mounted
// (the essential variant installs in a chroot): distrun stops it, and no
// image, partial image, staging folder, mount or tool is left.
TEST_F(ContainerWrapTest, AnInterruptedBuildLeavesNothing) {
  const std::string image = at("out.sif");
  const int pid = startCommand(
      wrapCommand({"-o", image, "--apt", "busybox", "--tmpdir", at("tmp")}), at("wrap.log"));
  const bool mounted =
      waitFor([&] { return !container::mountsUnder(at("tmp")).empty(); }, kStartSeconds);
  const bool running = !processesMentioning(at("tmp")).empty();
  ASSERT_TRUE(running) << "the build ended before the signal: " << slurp(at("wrap.log"));
  std::cout << (mounted ? "interrupting with the tree mounted\n"
                        : "no mount seen: interrupting anyway\n");
  ::kill(pid, SIGINT);
  EXPECT_EQ(waitCommand(pid), 130) << slurp(at("wrap.log"));
  EXPECT_THAT(slurp(at("wrap.log")),
              HasSubstr("distrun: wrap: interrupted by SIGINT: stopped the build and removed the "
                        "partial image and the staging folder; " +
                        image + " was not written\n"));
  EXPECT_FALSE(fs::exists(image));
  EXPECT_TRUE(fs::is_empty(at("tmp")));
  EXPECT_TRUE(container::mountsUnder(at("tmp")).empty());
  EXPECT_TRUE(processesMentioning(at("tmp")).empty()) << "a tool of the build is still running";
  for (const auto& entry : fs::directory_iterator(scratch_.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".partial-"), std::string::npos);
  }
}

TEST_F(ContainerWrapTest, SigtermStopsTheBuildWith143) {
  const std::string image = at("out.sqfs");
  const int pid = startCommand(wrapCommand({"-o", image, "--format", "squashfs", "--apt", "busybox",
                                            "--variant", "extract", "--tmpdir", at("tmp")}),
                               at("wrap.log"));
  ASSERT_TRUE(waitFor([&] { return !processesMentioning(at("tmp")).empty(); }, kStartSeconds))
      << slurp(at("wrap.log"));
  ::kill(pid, SIGTERM);
  EXPECT_EQ(waitCommand(pid), 143) << slurp(at("wrap.log"));
  EXPECT_FALSE(fs::exists(image));
  EXPECT_TRUE(fs::is_empty(at("tmp")));
  EXPECT_TRUE(processesMentioning(at("tmp")).empty());
}

TEST_F(ContainerWrapTest, MistakesAreRefusedBeforeAnythingIsStaged) {
  std::ofstream(at("exists.sqfs")) << "old";
  CommandResult r =
      wrap({"-o", at("exists.sqfs"), "--dir", at("proj") + ":/opt/proj", "--tmpdir", at("tmp")});
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_EQ(r.err, "distrun: error: -o " + at("exists.sqfs") +
                       ": the file exists: add --force to replace it, or choose another name\n");
  r = wrap({"-o", at("x.sqfs"), "--dir", at("none") + ":/opt/x", "--tmpdir", at("tmp")});
  EXPECT_EQ(r.exitCode, 66) << r.err;
  r = wrap({"-o", at("x.sqfs"), "--base", at("exists.sqfs"), "--tmpdir", at("tmp")});
  EXPECT_EQ(r.exitCode, 65) << r.err;
  EXPECT_THAT(r.err, HasSubstr("neither a SIF file nor a SquashFS file system"));
  EXPECT_TRUE(fs::is_empty(at("tmp")));
  EXPECT_EQ(slurp(at("exists.sqfs")), "old");
}

}  // namespace
}  // namespace distrun::testing
