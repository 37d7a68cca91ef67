#pragma once

#include <string>

#include "distrun/binding/node_topology.h"
#include "distrun/common/environment.h"

namespace distrun::binding {

// The node this process runs on: the cores it may use (a Slurm step's
// cgroup hides the others) and its NUMA domains, read with hwloc, and its
// GPUs (PCI 3D controllers, and display controllers of NVIDIA and AMD; a
// server's management VGA is not one), read from the kernel's PCI device
// folders `pciDevices` without hwloc's walk of every device's configuration
// space (each read about 1 ms on VMs: docs/launcher.md), numbered in PCI
// bus order as CUDA_DEVICE_ORDER=PCI_BUS_ID and ROCm number them, each with
// the cores of its local_cpulist. `host` names the source. SystemError (71)
// when hwloc cannot read the node.
inline constexpr const char* kPciDevicesFolder = "/sys/bus/pci/devices";
NodeTopology readLocalTopology(const std::string& host,
                               const std::string& pciDevices = kPciDevicesFolder);

// The same from an hwloc XML export (`lstopo node.xml`) or a synthetic
// description ("pack:2 numa:1 core:4 pu:2", hwloc's syntax): how a node
// type is described without running on it, and how tests fake one.
NodeTopology readTopologyXml(const std::string& path);
NodeTopology readSyntheticTopology(const std::string& description);

// The variable naming an hwloc XML export read instead of this node
// (docs/environment.md): how a test, or a user, describes a node.
inline constexpr const char* kNodeTopologyVariable = "DISTRUN_NODE_TOPOLOGY";

// This node as distrun run and exec plan it: $DISTRUN_NODE_TOPOLOGY's XML
// when set, else readLocalTopology(host). What those throw.
NodeTopology readNodeTopology(const Environment& env, const std::string& host);

}  // namespace distrun::binding
