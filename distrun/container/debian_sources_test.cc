#include "distrun/container/debian_sources.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "distrun/testing/container_tools.h"

namespace distrun::container {
namespace {

namespace fs = std::filesystem;

TEST(DebianSourcesTest, CodenameFromOsRelease) {
  EXPECT_EQ(codenameFromOsRelease("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
                                  "VERSION_CODENAME=bookworm\nID=debian\n"),
            "bookworm");
  EXPECT_EQ(codenameFromOsRelease("VERSION_CODENAME=\"trixie\"\n"), "trixie");
  EXPECT_EQ(codenameFromOsRelease("ID=alpine\n"), "");
}

TEST(DebianSourcesTest, ASuiteIsOneOfALinesWords) {
  EXPECT_TRUE(sourcesNameSuite("deb http://deb.debian.org/debian bookworm main\n", "bookworm"));
  EXPECT_TRUE(
      sourcesNameSuite("Types: deb\nURIs: http://mirror/debian\n"
                       "Suites: bookworm bookworm-updates\nComponents: main\n",
                       "bookworm"));
  EXPECT_FALSE(
      sourcesNameSuite("deb https://packages.cloud.google.com/apt cloud-sdk-bookworm "
                       "main\n",
                       "bookworm"));
  EXPECT_FALSE(sourcesNameSuite("# deb http://deb.debian.org/debian bookworm main\n", "bookworm"));
  EXPECT_FALSE(sourcesNameSuite("Suites: bookworm-backports\n", "bookworm"));
}

TEST(DebianSourcesTest, TheHostsFilesNamingTheSuiteInOrder) {
  distrun::testing::ScratchDir apt("apt");
  fs::create_directories(apt.path() + "/sources.list.d");
  std::ofstream(apt.path() + "/sources.list") << "# nothing here\n";
  std::ofstream(apt.path() + "/sources.list.d/debian.sources")
      << "Types: deb\nURIs: http://mirror.site/debian\nSuites: bookworm bookworm-updates\n";
  std::ofstream(apt.path() + "/sources.list.d/a-local.list")
      << "deb [trusted=yes] http://local/debian bookworm main\n";
  std::ofstream(apt.path() + "/sources.list.d/nodesource.sources") << "Suites: nodistro\n";
  std::ofstream(apt.path() + "/sources.list.d/old.list.disabled") << "deb http://x bookworm main\n";
  EXPECT_EQ(hostSourcesFor("bookworm", apt.path()),
            (std::vector<std::string>{apt.path() + "/sources.list.d/a-local.list",
                                      apt.path() + "/sources.list.d/debian.sources"}));
  EXPECT_TRUE(hostSourcesFor("trixie", apt.path()).empty());
  EXPECT_TRUE(hostSourcesFor("bookworm", apt.path() + "/none").empty());
}

}  // namespace
}  // namespace distrun::container
