#include "distrun/binding/local_topology.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/temp_dir_testing.h"
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

TEST(LocalTopologyTest, ThisNodesNumaDomainsCoverItsCores) {
  NodeTopology node = readLocalTopology("this host");
  EXPECT_EQ(node.source, "hwloc on this host");
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

// A folder of PCI devices as sysfs lists them: each device's attributes.
class PciDevices {
 public:
  void add(const std::string& address, const std::string& pciClass, const std::string& vendor,
           const std::string& numa, const std::string& localCpus) {
    std::filesystem::path device = std::filesystem::path(dir_.path()) / address;
    std::filesystem::create_directories(device);
    write(device / "class", pciClass);
    write(device / "vendor", vendor);
    if (!numa.empty()) write(device / "numa_node", numa);
    if (!localCpus.empty()) write(device / "local_cpulist", localCpus);
  }
  const std::string& path() const { return dir_.path(); }

 private:
  static void write(const std::filesystem::path& file, const std::string& value) {
    std::ofstream(file) << value << "\n";
  }
  testing::TempDir dir_;
};

// This node's cores with GPUs from a described PCI folder: the GPUs are its
// 3D controllers and NVIDIA's and AMD's display controllers, in bus order,
// each with the cores of its local_cpulist (all of them where the kernel
// gives none, or a NUMA node of -1 as on a VM); a management VGA (ASPEED)
// and a network card are not GPUs.
TEST(LocalTopologyTest, GpusComeFromThePciDevicesFolderInBusOrder) {
  NodeTopology node = readLocalTopology("this host");
  const int first = node.cpus.front();
  PciDevices pci;
  pci.add("0000:c1:00.0", "0x038000", "0x1002", "1", std::to_string(first));  // AMD MI250X GCD
  pci.add("0000:02:00.0", "0x030000", "0x1a03", "0", "");                     // ASPEED VGA
  pci.add("0000:17:00.0", "0x030200", "0x10de", "-1", "");                    // NVIDIA H100
  pci.add("0000:18:00.0", "0x020000", "0x15b3", "0", "");                     // Mellanox NIC
  pci.add("0000:65:00.0", "0x030000", "0x10de", "0", std::to_string(first));  // NVIDIA display
  NodeTopology withGpus = readLocalTopology("this host", pci.path());
  ASSERT_EQ(withGpus.gpus.size(), 3u);
  EXPECT_EQ(withGpus.gpus[0].index, 0);
  EXPECT_EQ(withGpus.gpus[0].numa, 0);
  EXPECT_EQ(withGpus.gpus[0].cpus, node.cpus);
  EXPECT_EQ(withGpus.gpus[1].cpus, (CpuList{first}));
  EXPECT_EQ(withGpus.gpus[2].index, 2);
  EXPECT_EQ(withGpus.gpus[2].numa, 1);
  EXPECT_EQ(withGpus.gpus[2].cpus, (CpuList{first}));
}

TEST(LocalTopologyTest, NoPciDevicesFolderIsANodeWithoutGpus) {
  EXPECT_TRUE(readLocalTopology("this host", "/nonexistent/pci/devices").gpus.empty());
}

TEST(LocalTopologyTest, AnUnreadableXmlIsASystemErrorNamingIt) {
  EXPECT_THROW(readTopologyXml("/nonexistent/node.xml"), SystemError);
}

}  // namespace
}  // namespace distrun::binding
