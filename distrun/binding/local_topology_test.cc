#include "distrun/binding/local_topology.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::binding {
namespace {

TEST(LocalTopologyTest, SyntheticNodeHasItsCoresAndNumaDomains) {
  NodeTopology node = readSyntheticTopology("pack:2 numa:1 core:4 pu:2");
  EXPECT_EQ(node.cpus, (CpuList{0, 2, 4, 6, 8, 10, 12, 14}));  // first thread of each core
  ASSERT_EQ(node.numaNodes.size(), 2u);
  EXPECT_EQ(node.numaNodes[1].cpus, (CpuList{8, 10, 12, 14}));
  EXPECT_TRUE(node.gpus.empty());
  node.validate();
}

// Two sockets with two cores each: a management VGA (ASPEED, class 0300) on
// socket 0 and an H100 (3D controller, class 0302) on socket 1.
TEST(LocalTopologyTest, GpusAreThreeDControllersWithTheirSocketsCores) {
  NodeTopology node = readTopologyXml(std::string(DISTRUN_SOURCE_DIR) +
                                      "/distrun/binding/testdata/two_sockets_one_gpu.xml");
  EXPECT_EQ(node.cpus, (CpuList{0, 1, 2, 3}));
  ASSERT_EQ(node.gpus.size(), 1u);
  EXPECT_EQ(node.gpus[0].index, 0);
  EXPECT_EQ(node.gpus[0].numa, 1);
  EXPECT_EQ(node.gpus[0].cpus, (CpuList{2, 3}));
  node.validate();
}

// A described node needs none of hwloc's plugins (libxml2, PCI, OpenCL, X11:
// they cost 4 ms a start), and the variable that keeps them out is gone
// afterwards, so the workers never see it. hwloc says which plugins it
// found when HWLOC_PLUGINS_VERBOSE is set.
TEST(LocalTopologyTest, ADescriptionIsReadWithoutHwlocsPlugins) {
  ASSERT_EQ(::getenv("HWLOC_PLUGINS_PATH"), nullptr);
  ::setenv("HWLOC_PLUGINS_VERBOSE", "1", 1);
  ::testing::internal::CaptureStderr();
  NodeTopology node = readTopologyXml(std::string(DISTRUN_SOURCE_DIR) +
                                      "/distrun/binding/testdata/two_sockets_one_gpu.xml");
  const std::string said = ::testing::internal::GetCapturedStderr();
  ::unsetenv("HWLOC_PLUGINS_VERBOSE");
  EXPECT_EQ(node.gpus.size(), 1u);
  EXPECT_THAT(said, ::testing::HasSubstr("Starting plugin dlforeach"));
  EXPECT_THAT(said, ::testing::Not(::testing::HasSubstr("Plugin dlforeach found")));
  EXPECT_EQ(::getenv("HWLOC_PLUGINS_PATH"), nullptr);
}

TEST(LocalTopologyTest, TheUsersOwnHwlocPluginFolderIsKept) {
  ::setenv("HWLOC_PLUGINS_PATH", "/my/plugins", 1);
  NodeTopology node = readSyntheticTopology("pack:1 core:2 pu:1");
  EXPECT_EQ(node.cpus.size(), 2u);
  const char* kept = ::getenv("HWLOC_PLUGINS_PATH");
  EXPECT_STREQ(kept, "/my/plugins");
  ::unsetenv("HWLOC_PLUGINS_PATH");
}

TEST(LocalTopologyTest, ThisNodesNumaDomainsCoverItsCores) {
  NodeTopology node = readLocalTopology("this host");
  EXPECT_EQ(node.source, "sysfs on this host");
  ASSERT_FALSE(node.cpus.empty());
  EXPECT_LE(node.cpus.size(), std::thread::hardware_concurrency());
  CpuList covered;
  for (const NodeTopology::Numa& numa : node.numaNodes) {
    covered.insert(covered.end(), numa.cpus.begin(), numa.cpus.end());
  }
  std::sort(covered.begin(), covered.end());
  EXPECT_EQ(covered, node.cpus);
  node.validate();
}

TEST(LocalTopologyTest, AnUnreadableXmlIsASystemErrorNamingIt) {
  EXPECT_THROW(readTopologyXml("/nonexistent/node.xml"), SystemError);
}

}  // namespace
}  // namespace distrun::binding
