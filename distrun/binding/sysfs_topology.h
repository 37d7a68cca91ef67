#pragma once

#include <string>

#include "distrun/binding/node_topology.h"

namespace distrun::binding {

// The running node as the kernel describes it under `sysRoot` (/sys):
//   cores      the CPUs of devices/system/cpu/online that this process's
//              cgroup allows (its cpuset.cpus.effective, or cgroup v1's
//              cpuset.cpus, found through /proc/self/cgroup), the first
//              allowed hardware thread of each core (topology/
//              thread_siblings_list);
//   NUMA       devices/system/node/online, each node's cpulist; one domain
//              of every core where the kernel has none;
//   GPUs       the PCI devices of bus/pci/devices whose class is a 3D
//              controller (0302), or a display controller (0300, 0380) of
//              NVIDIA (10de) or AMD (1002) — a server's management VGA is
//              not one — in bus order, as CUDA_DEVICE_ORDER=PCI_BUS_ID and
//              ROCm number them, each with its numa_node and the cores of
//              its local_cpulist (every core where the kernel gives none).
// Only those small attribute files are read: no PCI configuration space
// (hwloc's PCI walk reads each device's, about 1 ms a device on a VM) and
// no hwloc plugin, whose libraries (libpciaccess, OpenCL, X11, libxml2)
// took about 5 ms a start to load (docs/launcher.md, "Speed"). `source`
// names the result. IoError naming the file when devices/system/cpu/online
// cannot be read or a CPU list there is malformed.
NodeTopology readSysfsTopology(const std::string& sysRoot, const std::string& source);

// Whether a PCI device is a GPU by the rule above: `baseAndSub` is its
// class's base and subclass bytes (0x0302), `vendor` its vendor id. The one
// rule for sysfs and for hwloc's PCI objects of an XML description.
bool isPciGpu(long baseAndSub, long vendor);

}  // namespace distrun::binding
