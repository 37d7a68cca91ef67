#include "distrun/binding/local_topology.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <functional>

#include <hwloc.h>

#include <fmt/format.h>

#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"

namespace distrun::binding {
namespace {

// Points hwloc at what to read (nothing: this node); `call` names it.
// `ioDevices`: whether hwloc lists PCI devices, which it does by reading
// each one's configuration space.
struct Source {
  std::function<int(hwloc_topology_t)> configure;
  std::string call;
  std::string what;
  bool ioDevices = true;
};

class Topology {
 public:
  explicit Topology(const Source& source) {
    if (hwloc_topology_init(&t_) != 0) fail("hwloc_topology_init", source.what);
    if (source.configure(t_) != 0) fail(source.call, source.what);
    hwloc_topology_set_io_types_filter(
        t_, source.ioDevices ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT : HWLOC_TYPE_FILTER_KEEP_NONE);
    if (hwloc_topology_load(t_) != 0) fail("hwloc_topology_load", source.what);
  }
  ~Topology() { hwloc_topology_destroy(t_); }
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  hwloc_topology_t get() const { return t_; }

 private:
  [[noreturn]] void fail(const std::string& call, const std::string& what) {
    int error = errno;
    if (t_ != nullptr) hwloc_topology_destroy(t_);
    throw SystemError(call, what, error);
  }
  hwloc_topology_t t_ = nullptr;
};

// The first hardware thread of every core inside `set`.
CpuList coresIn(hwloc_topology_t t, hwloc_const_cpuset_t set) {
  CpuList cpus;
  hwloc_obj_type_t type =
      hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_obj_by_type(t, type, o)) != nullptr;) {
    if (hwloc_bitmap_intersects(o->cpuset, set)) cpus.push_back(hwloc_bitmap_first(o->cpuset));
  }
  return cpus;
}

// `baseAndSub`: the PCI class's base and subclass bytes (0x0302).
bool isGpu(unsigned baseAndSub, unsigned vendor) {
  bool gpuVendor = vendor == 0x10de || vendor == 0x1002;
  return baseAndSub == 0x0302 || baseAndSub == 0x0380 || (baseAndSub == 0x0300 && gpuVendor);
}

void addGpus(hwloc_topology_t t, NodeTopology& node) {
  for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(t, pci)) != nullptr;) {
    if (!isGpu(pci->attr->pcidev.class_id, pci->attr->pcidev.vendor_id)) continue;
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(t, pci);
    int numa = near->nodeset == nullptr ? 0 : std::max(0, hwloc_bitmap_first(near->nodeset));
    node.gpus.push_back({static_cast<int>(node.gpus.size()), numa, coresIn(t, near->cpuset)});
  }
}

// A sysfs attribute of a PCI device as a number ("0x030200\n", "1\n"); -1
// when it is missing or not a number.
long sysfsNumber(const std::filesystem::path& device, const char* attribute) {
  std::optional<std::string> text = readFileIfPresent((device / attribute).string());
  if (!text) return -1;
  try {
    return std::stol(std::string(trim(*text)), nullptr, 0);
  } catch (const std::exception&) {
    return -1;
  }
}

// The cores of `t` in a device's local_cpulist ("0-27,56-83"); every core
// when the kernel gives none.
CpuList localCores(hwloc_topology_t t, const std::filesystem::path& device) {
  std::optional<std::string> list = readFileIfPresent((device / "local_cpulist").string());
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!list || hwloc_bitmap_list_sscanf(set, std::string(trim(*list)).c_str()) != 0 ||
      hwloc_bitmap_iszero(set)) {
    hwloc_bitmap_copy(set, hwloc_topology_get_topology_cpuset(t));
  }
  CpuList cores = coresIn(t, set);
  hwloc_bitmap_free(set);
  return cores;
}

// The GPUs among the PCI devices of `pciDevices` (sysfs's /sys/bus/pci/
// devices: a folder per device named by its address), in bus order, from
// the kernel's cached attributes (class, vendor, numa_node, local_cpulist):
// the same devices as hwloc's PCI objects without reading each device's
// configuration space. A missing folder is a node without PCI devices.
void addSysfsGpus(hwloc_topology_t t, const std::string& pciDevices, NodeTopology& node) {
  std::error_code error;
  std::vector<std::filesystem::path> devices;
  for (const auto& entry : std::filesystem::directory_iterator(pciDevices, error)) {
    devices.push_back(entry.path());
  }
  std::sort(devices.begin(), devices.end());  // "dddd:bb:dd.f": name order is bus order
  for (const std::filesystem::path& device : devices) {
    long pciClass = sysfsNumber(device, "class");
    long vendor = sysfsNumber(device, "vendor");
    if (pciClass < 0 ||
        !isGpu(static_cast<unsigned>(pciClass >> 8), static_cast<unsigned>(vendor))) {
      continue;
    }
    int numa = static_cast<int>(std::max(0L, sysfsNumber(device, "numa_node")));
    node.gpus.push_back({static_cast<int>(node.gpus.size()), numa, localCores(t, device)});
  }
}

NodeTopology read(const Source& source, const std::string& pciDevices = "") {
  Topology topology(source);
  hwloc_topology_t t = topology.get();
  NodeTopology node;
  node.source = source.what;
  node.cpus = coresIn(t, hwloc_topology_get_topology_cpuset(t));
  for (hwloc_obj_t n = nullptr;
       (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) != nullptr;) {
    node.numaNodes.push_back({static_cast<int>(n->os_index), coresIn(t, n->cpuset)});
  }
  if (source.ioDevices) {
    addGpus(t, node);
  } else {
    addSysfsGpus(t, pciDevices, node);
  }
  return node;
}

}  // namespace

NodeTopology readLocalTopology(const std::string& host, const std::string& pciDevices) {
  return read({[](hwloc_topology_t) { return 0; }, "", "hwloc on " + host, false}, pciDevices);
}

NodeTopology readTopologyXml(const std::string& path) {
  return read({[&path](hwloc_topology_t t) { return hwloc_topology_set_xml(t, path.c_str()); },
               "hwloc_topology_set_xml", "hwloc XML " + path});
}

NodeTopology readSyntheticTopology(const std::string& description) {
  auto configure = [&description](hwloc_topology_t t) {
    return hwloc_topology_set_synthetic(t, description.c_str());
  };
  return read({configure, "hwloc_topology_set_synthetic", "hwloc synthetic '" + description + "'"});
}

NodeTopology readNodeTopology(const Environment& env, const std::string& host) {
  std::optional<std::string> xml = env.get(kNodeTopologyVariable);
  if (xml && !xml->empty()) return readTopologyXml(*xml);
  return readLocalTopology(host);
}

}  // namespace distrun::binding
