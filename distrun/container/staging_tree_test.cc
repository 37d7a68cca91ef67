#include "distrun/container/staging_tree.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/testing/command.h"
#include "distrun/testing/container_tools.h"

namespace distrun::container {
namespace {

namespace fs = std::filesystem;

mode_t modeOf(const std::string& path) {
  struct stat st {};
  ::lstat(path.c_str(), &st);
  return st.st_mode & 07777;
}

class StagingTreeTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(scratch_.path().empty()); }
  std::string at(const std::string& relative) { return scratch_.path() + "/" + relative; }

  distrun::testing::ScratchDir scratch_{"staging-tree"};
};

TEST_F(StagingTreeTest, MeasureCountsEveryEntryAndTheFilesBytes) {
  fs::create_directories(at("root/a/b"));
  std::ofstream(at("root/a/one")) << "12345";
  std::ofstream(at("root/a/b/two")) << "123";
  fs::create_symlink("/nowhere", at("root/link"));
  TreeStats stats = measureTree(at("root"));
  EXPECT_EQ(stats.entries, 5u);  // a, a/b, a/one, a/b/two, link
  EXPECT_EQ(stats.bytes, 8u);
  EXPECT_EQ(measureTree(at("missing")).entries, 0u);
}

TEST_F(StagingTreeTest, ListedFileBytesSumsRegularFiles) {
  const std::string listing =
      "drwxr-xr-x 0/0                     117 2026-05-07 20:33 squashfs-root\n"
      "-rwxr-xr-x 0/0                  772880 2026-05-07 20:33 squashfs-root/bin/busybox\n"
      "lrwxrwxrwx 0/0                       7 2026-05-07 20:33 squashfs-root/lib -> usr/lib\n"
      "crw-rw-rw- 0/0                   5,  1 2026-11-24 01:00 squashfs-root/dev/console\n"
      "-rw-r--r-- 1000/1000                20 2026-05-07 20:33 squashfs-root/opt/a b\n";
  EXPECT_EQ(listedFileBytes(listing), 772900u);
}

TEST_F(StagingTreeTest, PathsResolveInsideTheImageNeverOnTheHost) {
  const std::string root = at("root");
  fs::create_directories(root + "/usr/lib");
  fs::create_directories(root + "/etc");
  fs::create_symlink("usr/lib", root + "/lib");            // relative
  fs::create_symlink("/usr/lib", root + "/etc/absolute");  // absolute: the image's /usr/lib
  fs::create_symlink("../../..", root + "/etc/up");        // cannot climb out
  EXPECT_EQ(resolveInRoot(root, "/lib/x"), root + "/usr/lib/x");
  EXPECT_EQ(resolveInRoot(root, "/etc/absolute/y"), root + "/usr/lib/y");
  EXPECT_EQ(resolveInRoot(root, "/etc/up/etc"), root + "/etc");
  EXPECT_EQ(resolveInRoot(root, "/opt/new/dir"), root + "/opt/new/dir");
  EXPECT_EQ(resolveInRoot(root, "/"), root);
}

TEST_F(StagingTreeTest, ASymlinkLoopIsAnError) {
  const std::string root = at("root");
  fs::create_directories(root);
  fs::create_symlink("/b", root + "/a");
  fs::create_symlink("/a", root + "/b");
  EXPECT_THROW(resolveInRoot(root, "/a/x"), IoError);
}

TEST_F(StagingTreeTest, TheLayoutHasMountPointsAndSingularityFolders) {
  const std::string root = at("root");
  fs::create_directories(root + "/etc");
  std::ofstream(root + "/etc/hosts") << "127.0.0.1 kept\n";
  makeImageLayout(root);
  for (const char* dir : {"proc", "sys", "dev", "home", "root", "run", "mnt", "tmp", "var/tmp",
                          ".singularity.d/env", ".singularity.d/libs"}) {
    EXPECT_TRUE(fs::is_directory(root + "/" + dir)) << dir;
  }
  EXPECT_EQ(modeOf(root + "/tmp"), 01777u);
  EXPECT_EQ(modeOf(root + "/var/tmp"), 01777u);
  EXPECT_EQ(readFileIfPresent(root + "/etc/hosts").value_or(""), "127.0.0.1 kept\n");
  EXPECT_EQ(readFileIfPresent(root + "/etc/resolv.conf").value_or(""), "");
  EXPECT_EQ(modeOf(root + "/.singularity.d/actions/exec"), 0755u);
  EXPECT_NE(
      readFileIfPresent(root + "/.singularity.d/actions/exec").value_or("").find("exec \"$@\""),
      std::string::npos);
  makeImageLayout(root);  // again: nothing changes, nothing fails
}

TEST_F(StagingTreeTest, TheBuildHostsResolvConfAndHostnameAreForgotten) {
  const std::string host = at("host");
  const std::string root = at("root");
  fs::create_directories(host + "/etc");
  fs::create_directories(root + "/etc");
  std::ofstream(host + "/etc/resolv.conf") << "nameserver 10.0.0.1\n";
  std::ofstream(host + "/etc/hostname") << "buildhost\n";
  std::ofstream(root + "/etc/resolv.conf") << "nameserver 10.0.0.1\n";  // mmdebstrap's copy
  std::ofstream(root + "/etc/hostname") << "from-a-package\n";
  forgetBuildHost(root, host);
  EXPECT_FALSE(fs::exists(root + "/etc/resolv.conf"));
  EXPECT_EQ(readFileIfPresent(root + "/etc/hostname").value_or(""), "from-a-package\n");
}

TEST_F(StagingTreeTest, EnvironmentLinesExportAndPrependPath) {
  EXPECT_EQ(environmentLines({{"OMP_NUM_THREADS", "8"}, {"GREETING", "it's here"}},
                             {"/opt/env/bin", "/opt/tools"}),
            "export OMP_NUM_THREADS=8\n"
            "export GREETING='it'\\''s here'\n"
            "PATH=/opt/env/bin:/opt/tools\"${PATH:+:$PATH}\"\n"
            "export PATH\n");
  EXPECT_EQ(environmentLines({}, {}), "");
}

TEST_F(StagingTreeTest, TheEnvironmentFileIsSourcedBySh) {
  const std::string root = at("root");
  fs::create_directories(root);
  appendEnvironment(root, environmentLines({{"A", "one two"}}, {"/opt/env/bin"}));
  appendEnvironment(root, environmentLines({{"B", "$HOME"}}, {}));  // a second build on top
  const std::string file = root + kEnvFile;
  EXPECT_EQ(modeOf(file), 0755u);
  auto result =
      distrun::testing::runCommand("PATH=/usr/bin:/bin; . " + distrun::testing::quote(file) +
                                   "; printf '%s|%s|%s' \"$A\" \"$B\" \"$PATH\"");
  EXPECT_EQ(result.out, "one two|$HOME|/opt/env/bin:/usr/bin:/bin");
}

TEST_F(StagingTreeTest, RemoveStagingRemovesTheWholeTree) {
  fs::create_directories(at("staging/root/a"));
  std::ofstream(at("staging/root/a/f")) << "x";
  EXPECT_TRUE(removeStaging(at("staging")));
  EXPECT_FALSE(fs::exists(at("staging")));
  EXPECT_TRUE(mountsUnder(at("staging")).empty());
}

TEST_F(StagingTreeTest, RemoveStagingRemovesReadOnlyFolders) {
  fs::create_directories(at("staging/root/usr/share/locked/deeper"));
  std::ofstream(at("staging/root/usr/share/locked/deeper/f")) << "x";
  ::chmod(at("staging/root/usr/share/locked/deeper").c_str(), 0555);
  ::chmod(at("staging/root/usr/share/locked").c_str(), 0);
  EXPECT_TRUE(removeStaging(at("staging")));
  EXPECT_FALSE(fs::exists(at("staging")));
}

// mmdebstrap mounts /proc and binds /dev into the tree it installs: the
// removal detaches them and never deletes a host file through a mount.
TEST_F(StagingTreeTest, RemoveStagingDetachesMountsFirst) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount";
  fs::create_directories(at("host"));
  std::ofstream(at("host/precious")) << "keep me";
  fs::create_directories(at("staging/root/dev"));
  fs::create_directories(at("staging/root/proc"));
  ASSERT_EQ(::mount(at("host").c_str(), at("staging/root/dev").c_str(), nullptr, MS_BIND, nullptr),
            0);
  ASSERT_EQ(::mount("none", at("staging/root/proc").c_str(), "tmpfs", 0, nullptr), 0);
  EXPECT_EQ(mountsUnder(at("staging")).size(), 2u);
  EXPECT_TRUE(removeStaging(at("staging")));
  EXPECT_FALSE(fs::exists(at("staging")));
  EXPECT_EQ(readFileIfPresent(at("host/precious")).value_or(""), "keep me");
}

}  // namespace
}  // namespace distrun::container
