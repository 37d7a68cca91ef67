#include "distrun/binding/sysfs_topology.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"
#include "distrun/common/temp_dir_testing.h"

namespace distrun::binding {
namespace {

using ::testing::HasSubstr;

// A folder laid out as /sys: write("devices/system/cpu/online", "0-3").
class FakeSysfs {
 public:
  void write(const std::string& relative, const std::string& value) const {
    std::filesystem::path file = std::filesystem::path(dir_.path()) / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << value << "\n";
  }
  // A PCI device: its class, vendor and, where given, numa_node and local_cpulist.
  void pci(const std::string& address, const std::string& pciClass, const std::string& vendor,
           const std::string& numa = "", const std::string& localCpus = "") const {
    const std::string device = "bus/pci/devices/" + address + "/";
    write(device + "class", pciClass);
    write(device + "vendor", vendor);
    if (!numa.empty()) write(device + "numa_node", numa);
    if (!localCpus.empty()) write(device + "local_cpulist", localCpus);
  }
  // Eight CPUs on two sockets, two threads a core (cpu N and N+4).
  void twoSocketsWithThreads() const {
    write("devices/system/cpu/online", "0-7");
    for (int cpu = 0; cpu < 8; ++cpu) {
      write("devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list",
            std::to_string(cpu % 4) + "," + std::to_string(cpu % 4 + 4));
    }
    write("devices/system/node/online", "0-1");
    write("devices/system/node/node0/cpulist", "0-1,4-5");
    write("devices/system/node/node1/cpulist", "2-3,6-7");
  }
  const std::string& root() const { return dir_.path(); }

 private:
  testing::TempDir dir_;
};

// The cores are each core's first thread; the NUMA domains and the GPUs'
// closest cores are in cores. GPUs: the 3D controller, NVIDIA's display
// controller and AMD's (class 0380) in bus order; the management VGA
// (ASPEED) and the network card are not GPUs. A GPU without local_cpulist
// or with numa_node -1 (a VM) is near every core, in domain 0.
TEST(SysfsTopologyTest, CoresNumaDomainsAndGpusInBusOrder) {
  FakeSysfs sys;
  sys.twoSocketsWithThreads();
  sys.pci("0000:c1:00.0", "0x038000", "0x1002", "-1");            // AMD MI250X GCD
  sys.pci("0000:02:00.0", "0x030000", "0x1a03", "0", "0-1,4-5");  // ASPEED VGA
  sys.pci("0000:17:00.0", "0x030200", "0x10de", "0", "0-1,4-5");  // NVIDIA H100
  sys.pci("0000:18:00.0", "0x020000", "0x15b3", "0", "0-1,4-5");  // Mellanox NIC
  sys.pci("0000:65:00.0", "0x030000", "0x10de", "1", "2-3,6-7");  // NVIDIA display
  NodeTopology node = readSysfsTopology(sys.root(), "sysfs on n1");
  EXPECT_EQ(node.source, "sysfs on n1");
  EXPECT_EQ(node.cpus, (CpuList{0, 1, 2, 3}));
  ASSERT_EQ(node.numaNodes.size(), 2u);
  EXPECT_EQ(node.numaNodes[0].cpus, (CpuList{0, 1}));
  EXPECT_EQ(node.numaNodes[1].id, 1);
  EXPECT_EQ(node.numaNodes[1].cpus, (CpuList{2, 3}));
  ASSERT_EQ(node.gpus.size(), 3u);
  EXPECT_EQ(node.gpus[0].index, 0);
  EXPECT_EQ(node.gpus[0].numa, 0);
  EXPECT_EQ(node.gpus[0].cpus, (CpuList{0, 1}));
  EXPECT_EQ(node.gpus[1].numa, 1);
  EXPECT_EQ(node.gpus[1].cpus, (CpuList{2, 3}));
  EXPECT_EQ(node.gpus[2].index, 2);
  EXPECT_EQ(node.gpus[2].numa, 0);
  EXPECT_EQ(node.gpus[2].cpus, (CpuList{0, 1, 2, 3}));
  node.validate();
}

// This process's cgroup (found through /proc/self/cgroup, looked up under
// the root) narrows the cores, as a Slurm step's does.
TEST(SysfsTopologyTest, TheCgroupsCpusetNarrowsTheCores) {
  FakeSysfs sys;
  sys.twoSocketsWithThreads();
  std::istringstream lines(readFileIfPresent("/proc/self/cgroup").value_or(""));
  bool placed = false;
  for (std::string line; std::getline(lines, line) && !placed;) {
    std::vector<std::string> f = split(line, ':');
    if (f.size() < 3) continue;
    const std::string path = line.substr(f[0].size() + f[1].size() + 2);
    if (f[0] == "0" && f[1].empty()) {
      sys.write("fs/cgroup" + path + "/cpuset.cpus.effective", "1-2,5-6");
      placed = true;
    } else if (f[1] == "cpuset") {
      sys.write("fs/cgroup/cpuset" + path + "/cpuset.cpus", "1-2,5-6");
      placed = true;
    }
  }
  if (!placed) GTEST_SKIP() << "this process has no cgroup in /proc/self/cgroup";
  NodeTopology node = readSysfsTopology(sys.root(), "sysfs on n1");
  EXPECT_EQ(node.cpus, (CpuList{1, 2}));
  EXPECT_EQ(node.numaNodes[0].cpus, (CpuList{1}));
  EXPECT_EQ(node.numaNodes[1].cpus, (CpuList{2}));
}

// A kernel without NUMA folders or PCI devices: one domain of every core,
// no GPU; a CPU without thread_siblings_list is a core of its own.
TEST(SysfsTopologyTest, NoNumaOrPciFoldersIsOneDomainAndNoGpu) {
  FakeSysfs sys;
  sys.write("devices/system/cpu/online", "0-2");
  NodeTopology node = readSysfsTopology(sys.root(), "sysfs on n1");
  EXPECT_EQ(node.cpus, (CpuList{0, 1, 2}));
  ASSERT_EQ(node.numaNodes.size(), 1u);
  EXPECT_EQ(node.numaNodes[0].cpus, (CpuList{0, 1, 2}));
  EXPECT_TRUE(node.gpus.empty());
  node.validate();
}

TEST(SysfsTopologyTest, AnUnreadableOrMalformedCpuListIsAnIoErrorNamingTheFile) {
  FakeSysfs sys;
  try {
    readSysfsTopology(sys.root(), "sysfs on n1");
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot read the node's CPUs from " + sys.root() + "/devices/system/cpu/online");
  }
  sys.write("devices/system/cpu/online", "0-x");
  try {
    readSysfsTopology(sys.root(), "sysfs on n1");
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(), HasSubstr(sys.root() + "/devices/system/cpu/online"));
    EXPECT_THAT(e.what(), HasSubstr("0-x"));
  }
}

}  // namespace
}  // namespace distrun::binding
