#include "distrun/binding/local_topology.h"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <mutex>

#include <hwloc.h>

#include <fmt/format.h>

#include "distrun/binding/sysfs_topology.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"

namespace distrun::binding {
namespace {

// Points hwloc at what to read (nothing: this node); `call` names it.
struct Source {
  std::function<int(hwloc_topology_t)> configure;
  std::string call;
  std::string what;
};

// hwloc loads every plugin of its folder at hwloc_topology_init (while no
// other topology is open): libxml2 for XML, libpciaccess, OpenCL and X11 here,
// and on GPU nodes CUDA's and NVML's, all to discover this host's devices. A
// topology read from a description (XML, synthetic) needs none of them,
// hwloc's own parser reads the XML: `distrun run` on a described 8-GPU node
// started two workers in 10.3 ms with them and 6.1 ms without
// (bench/launch.sh). While a topology is made HWLOC_PLUGINS_PATH names no
// folder, unless the user set it; the lock keeps two threads (doctor's
// checks) from changing the environment at once, and the variable is gone
// again before any worker starts.
class WithoutHwlocPlugins {
 public:
  WithoutHwlocPlugins() : lock_(mutex()) {
    set_ = ::getenv(kVariable) == nullptr && ::setenv(kVariable, kNoFolder, 0) == 0;
  }
  ~WithoutHwlocPlugins() {
    if (set_) ::unsetenv(kVariable);
  }
  WithoutHwlocPlugins(const WithoutHwlocPlugins&) = delete;
  WithoutHwlocPlugins& operator=(const WithoutHwlocPlugins&) = delete;

 private:
  static constexpr const char* kVariable = "HWLOC_PLUGINS_PATH";
  static constexpr const char* kNoFolder =
      "/nonexistent/distrun-reads-descriptions-without-plugins";
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  std::lock_guard<std::mutex> lock_;
  bool set_ = false;
};

class Topology {
 public:
  explicit Topology(const Source& source) {
    const WithoutHwlocPlugins withoutPlugins;
    if (hwloc_topology_init(&t_) != 0) fail("hwloc_topology_init", source.what);
    if (source.configure(t_) != 0) fail(source.call, source.what);
    hwloc_topology_set_io_types_filter(t_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
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

bool isGpu(const hwloc_obj_t pci) {
  return isPciGpu(pci->attr->pcidev.class_id, pci->attr->pcidev.vendor_id);
}

void addGpus(hwloc_topology_t t, NodeTopology& node) {
  for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(t, pci)) != nullptr;) {
    if (!isGpu(pci)) continue;
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(t, pci);
    int numa = near->nodeset == nullptr ? 0 : std::max(0, hwloc_bitmap_first(near->nodeset));
    node.gpus.push_back({static_cast<int>(node.gpus.size()), numa, coresIn(t, near->cpuset)});
  }
}

NodeTopology read(const Source& source) {
  Topology topology(source);
  hwloc_topology_t t = topology.get();
  NodeTopology node;
  node.source = source.what;
  node.cpus = coresIn(t, hwloc_topology_get_topology_cpuset(t));
  for (hwloc_obj_t n = nullptr;
       (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) != nullptr;) {
    node.numaNodes.push_back({static_cast<int>(n->os_index), coresIn(t, n->cpuset)});
  }
  addGpus(t, node);
  return node;
}

}  // namespace

NodeTopology readLocalTopology(const std::string& host) {
  return readSysfsTopology("/sys", "sysfs on " + host);
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
