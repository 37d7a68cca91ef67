#include "distrun/binding/sysfs_topology.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"

namespace distrun::binding {
namespace {

namespace fs = std::filesystem;

// A kernel CPU list file ("0-3,8\n"); nullopt when it is missing or empty.
std::optional<CpuList> readCpuListFile(const fs::path& path) {
  std::optional<std::string> text = readFileIfPresent(path.string());
  if (!text || trim(*text).empty()) return std::nullopt;
  try {
    return parseCpuList(trim(*text), path.string());
  } catch (const ConfigError& e) {
    throw IoError(e.what());
  }
}

// This process's cgroup cpuset under sysRoot/fs/cgroup: v2's
// cpuset.cpus.effective at its path ("0::/job_12/step_0"), else v1's
// cpuset.cpus ("4:cpuset:/slurm/job_12"). nullopt when neither is there.
std::optional<CpuList> cgroupCpus(const fs::path& sysRoot) {
  std::istringstream lines(readFileIfPresent("/proc/self/cgroup").value_or(""));
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f = split(line, ':');
    if (f.size() < 3) continue;
    const std::string path = line.substr(f[0].size() + f[1].size() + 2);
    std::optional<CpuList> cpus;
    if (f[0] == "0" && f[1].empty()) {
      cpus = readCpuListFile(sysRoot / "fs/cgroup" / fs::path(path).relative_path() /
                             "cpuset.cpus.effective");
    } else if (f[1] == "cpuset") {
      cpus = readCpuListFile(sysRoot / "fs/cgroup/cpuset" / fs::path(path).relative_path() /
                             "cpuset.cpus");
    }
    if (cpus) return cpus;
  }
  return std::nullopt;
}

CpuList allowedCpus(const fs::path& sysRoot) {
  const fs::path online = sysRoot / "devices/system/cpu/online";
  std::optional<CpuList> cpus = readCpuListFile(online);
  if (!cpus) throw IoError(fmt::format("cannot read the node's CPUs from {}", online.string()));
  std::optional<CpuList> cgroup = cgroupCpus(sysRoot);
  return cgroup ? onlyWithin(*cpus, *cgroup) : *cpus;
}

// The core of every allowed CPU, as the first allowed thread of that core.
std::map<int, int> coresOf(const fs::path& sysRoot, const CpuList& allowed) {
  std::map<int, int> core;
  for (int cpu : allowed) {
    CpuList siblings = readCpuListFile(sysRoot / fmt::format("devices/system/cpu/cpu{}/topology/"
                                                             "thread_siblings_list",
                                                             cpu))
                           .value_or(CpuList{cpu});
    CpuList allowedSiblings = onlyWithin(siblings, allowed);
    core[cpu] = allowedSiblings.empty() ? cpu : allowedSiblings.front();
  }
  return core;
}

// The cores (first threads) of the CPUs in `cpus`.
CpuList coresIn(const std::map<int, int>& core, const CpuList& cpus) {
  CpuList out;
  for (int cpu : cpus) {
    auto it = core.find(cpu);
    if (it != core.end()) out.push_back(it->second);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void addNumaNodes(const fs::path& sysRoot, const std::map<int, int>& core, NodeTopology& node) {
  std::optional<CpuList> ids = readCpuListFile(sysRoot / "devices/system/node/online");
  if (!ids) {
    node.numaNodes.push_back({0, node.cpus});
    return;
  }
  for (int id : *ids) {
    CpuList cpus = readCpuListFile(sysRoot / fmt::format("devices/system/node/node{}/cpulist", id))
                       .value_or(CpuList{});
    node.numaNodes.push_back({id, coresIn(core, cpus)});
  }
}

// A PCI device's attribute as a number ("0x030200\n", "1\n"); -1 when it is
// missing or not a number.
long deviceNumber(const fs::path& device, const char* attribute) {
  std::optional<std::string> text = readFileIfPresent((device / attribute).string());
  if (!text) return -1;
  try {
    return std::stol(std::string(trim(*text)), nullptr, 0);
  } catch (const std::exception&) {
    return -1;
  }
}

void addGpus(const fs::path& sysRoot, const std::map<int, int>& core, NodeTopology& node) {
  std::error_code error;
  std::vector<fs::path> devices;
  for (const auto& entry : fs::directory_iterator(sysRoot / "bus/pci/devices", error)) {
    devices.push_back(entry.path());
  }
  std::sort(devices.begin(), devices.end());  // "dddd:bb:dd.f": name order is bus order
  for (const fs::path& device : devices) {
    const long pciClass = deviceNumber(device, "class");  // 0x030200: base, sub, interface
    if (pciClass < 0 || !isPciGpu(pciClass >> 8, deviceNumber(device, "vendor"))) continue;
    CpuList cores = coresIn(core, readCpuListFile(device / "local_cpulist").value_or(CpuList{}));
    if (cores.empty()) cores = node.cpus;
    int numa = static_cast<int>(std::max(0L, deviceNumber(device, "numa_node")));
    node.gpus.push_back({static_cast<int>(node.gpus.size()), numa, cores});
  }
}

}  // namespace

bool isPciGpu(long baseAndSub, long vendor) {
  const bool gpuVendor = vendor == 0x10de || vendor == 0x1002;
  return baseAndSub == 0x0302 || baseAndSub == 0x0380 || (baseAndSub == 0x0300 && gpuVendor);
}

NodeTopology readSysfsTopology(const std::string& sysRoot, const std::string& source) {
  const fs::path root(sysRoot);
  NodeTopology node;
  node.source = source;
  const std::map<int, int> core = coresOf(root, allowedCpus(root));
  for (const auto& [cpu, first] : core) node.cpus.push_back(first);
  std::sort(node.cpus.begin(), node.cpus.end());
  node.cpus.erase(std::unique(node.cpus.begin(), node.cpus.end()), node.cpus.end());
  addNumaNodes(root, core, node);
  addGpus(root, core, node);
  return node;
}

}  // namespace distrun::binding
