#include "distrun/container/mount_plan.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::container {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = SandboxMount::Kind;

// An image tree in memory: "/bin" -> folder, "/lib" -> link to "usr/lib".
class MapImageTree : public ImageTree {
 public:
  MapImageTree& folder(const std::string& path) {
    kinds_[path] = EntryKind::kDirectory;
    return *this;
  }
  MapImageTree& file(const std::string& path) {
    kinds_[path] = EntryKind::kFile;
    return *this;
  }
  MapImageTree& link(const std::string& path, const std::string& target) {
    kinds_[path] = EntryKind::kSymlink;
    targets_[path] = target;
    return *this;
  }
  EntryKind kind(const std::string& path) const override {
    auto it = kinds_.find(path);
    return it == kinds_.end() ? EntryKind::kMissing : it->second;
  }
  std::vector<std::string> entries(const std::string& path) const override {
    std::vector<std::string> names;
    std::string prefix = path == "/" ? "/" : path + "/";
    for (const auto& [entry, kind] : kinds_) {
      bool child =
          entry.rfind(prefix, 0) == 0 && entry.find('/', prefix.size()) == std::string::npos;
      if (child && entry != path) names.push_back(entry.substr(prefix.size()));
    }
    return names;
  }
  std::string linkTarget(const std::string& path) const override { return targets_.at(path); }

 private:
  std::map<std::string, EntryKind> kinds_;
  std::map<std::string, std::string> targets_;
};

SandboxMount bind(const std::string& source, const std::string& destination) {
  return SandboxMount{Kind::kBind, source, destination, false, false, "bind " + destination};
}

MapImageTree debianLike() {
  MapImageTree tree;
  tree.folder("/etc").file("/etc/hosts").folder("/home").folder("/tmp").folder("/usr");
  tree.folder("/usr/lib").link("/lib", "usr/lib").file("/marker");
  return tree;
}

TEST(MountPlanTest, TheRootIsATmpfsWithTheImagesTopLevelEntriesBoundIn) {
  std::vector<std::string> args = planMounts(debianLike(), "/m", {});
  EXPECT_THAT(args, ElementsAre("--ro-bind", "/m/etc", "/etc", "--ro-bind", "/m/home", "/home",
                                "--symlink", "usr/lib", "/lib", "--ro-bind", "/m/marker", "/marker",
                                "--ro-bind", "/m/tmp", "/tmp", "--ro-bind", "/m/usr", "/usr"));
}

TEST(MountPlanTest, AnImageEntryAMountReplacesIsNotBound) {
  std::vector<std::string> args =
      planMounts(MapImageTree().folder("/tmp").folder("/usr"), "/m", {bind("/tmp", "/tmp")});
  EXPECT_THAT(args, ElementsAre("--ro-bind", "/m/usr", "/usr", "--bind", "/tmp", "/tmp"));
}

TEST(MountPlanTest, AFolderThatLacksADestinationIsRebuiltWithItsEntriesBoundIn) {
  MapImageTree tree = MapImageTree().folder("/home").folder("/home/other").file("/home/.keep");
  std::vector<std::string> args = planMounts(tree, "/m", {bind("/home/ada/p", "/home/ada/p")});
  EXPECT_THAT(
      args, ElementsAre("--dir", "/home", "--ro-bind", "/m/home/.keep", "/home/.keep", "--ro-bind",
                        "/m/home/other", "/home/other", "--bind", "/home/ada/p", "/home/ada/p"));
}

TEST(MountPlanTest, FoldersAreRebuiltDownToTheDeepestOneTheImageHas) {
  MapImageTree tree =
      MapImageTree().folder("/opt").folder("/opt/a").file("/opt/a/x").file("/opt/y");
  std::vector<std::string> args = planMounts(tree, "/m", {bind("/d", "/opt/a/new/d")});
  EXPECT_THAT(args,
              ElementsAre("--dir", "/opt", "--dir", "/opt/a", "--ro-bind", "/m/opt/a/x", "/opt/a/x",
                          "--ro-bind", "/m/opt/y", "/opt/y", "--bind", "/d", "/opt/a/new/d"));
}

TEST(MountPlanTest, ADestinationTheImageHasIsMountedOverInPlace) {
  SandboxMount hosts{Kind::kReadOnlyBind, "/etc/hosts", "/etc/hosts", true, true, "/etc/hosts"};
  std::vector<std::string> args =
      planMounts(MapImageTree().folder("/etc").file("/etc/hosts"), "/m", {hosts});
  EXPECT_THAT(args,
              ElementsAre("--ro-bind", "/m/etc", "/etc", "--ro-bind", "/etc/hosts", "/etc/hosts"));
}

TEST(MountPlanTest, ParentsAreMountedBeforeChildrenAndOtherwiseInOrder) {
  std::vector<std::string> args = planMounts(
      MapImageTree(), "/m", {bind("/s", "/data/sub"), bind("/a", "/data"), bind("/b", "/data")});
  EXPECT_THAT(args, ElementsAre("--bind", "/a", "/data", "--bind", "/b", "/data", "--bind", "/s",
                                "/data/sub"));
}

TEST(MountPlanTest, AMountInsideAnotherIsNotCheckedAgainstTheImage) {
  // /lib/x would lie under the image's link /lib, but /lib is a mount here.
  MapImageTree tree = MapImageTree().link("/lib", "usr/lib");
  std::vector<std::string> args =
      planMounts(tree, "/m", {bind("/l", "/lib"), bind("/x", "/lib/x")});
  EXPECT_THAT(args, ElementsAre("--bind", "/l", "/lib", "--bind", "/x", "/lib/x"));
}

TEST(MountPlanTest, KindsOfMountBecomeBubblewrapFlags) {
  std::vector<std::string> args =
      planMounts(MapImageTree(), "/m",
                 {SandboxMount{Kind::kDeviceBind, "/dev", "/dev", false, false, "/dev"},
                  SandboxMount{Kind::kReadOnlyBind, "/sys", "/sys", false, false, "/sys"}});
  EXPECT_THAT(args, ElementsAre("--dev-bind", "/dev", "/dev", "--ro-bind", "/sys", "/sys"));
}

TEST(MountPlanTest, ADestinationUnderALinkInTheImageIsAnError) {
  try {
    planMounts(debianLike(), "/m", {bind("/x", "/lib/x")});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "bind /lib/x: /lib/x lies under /lib, a symbolic link in the image: bind to a path "
              "without links, the one /lib leads to");
    EXPECT_EQ(e.exitCode(), ExitCode::kConfig);
  }
}

TEST(MountPlanTest, AMountReplacesAnImageEntryOfAnotherKind) {
  SandboxMount file{Kind::kBind, "/h/x.conf", "/etc/ssl", true, false, "bind /h/x.conf:/etc/ssl"};
  MapImageTree tree = MapImageTree().folder("/etc").folder("/etc/ssl").file("/etc/x");
  EXPECT_THAT(planMounts(tree, "/m", {file}),
              ElementsAre("--dir", "/etc", "--ro-bind", "/m/etc/x", "/etc/x", "--bind", "/h/x.conf",
                          "/etc/ssl"));
}

TEST(MountPlanTest, AnOptionalMountTheImageCannotTakeIsLeftOut) {
  SandboxMount hosts{Kind::kReadOnlyBind, "/etc/hosts", "/etc/hosts", true, true, "/etc/hosts"};
  MapImageTree tree = MapImageTree().folder("/etc").folder("/etc/hosts");
  EXPECT_THAT(planMounts(tree, "/m", {hosts}), ElementsAre("--ro-bind", "/m/etc", "/etc"));
  MapImageTree linked = MapImageTree().link("/etc", "/other");
  EXPECT_THAT(planMounts(linked, "/m", {hosts}), ElementsAre("--symlink", "/other", "/etc"));
}

TEST(MountPlanTest, MountingOverTheRootIsAnError) {
  EXPECT_THROW(
      {
        try {
          planMounts(debianLike(), "/m", {bind("/x", "/")});
        } catch (const ConfigError& e) {
          EXPECT_THAT(e.what(), HasSubstr("cannot mount over the image's root folder"));
          throw;
        }
      },
      ConfigError);
}

}  // namespace
}  // namespace distrun::container
