#pragma once

#include <string>

#include "distrun/binding/node_topology.h"
#include "distrun/common/environment.h"

namespace distrun::binding {

// The node this process runs on, from the kernel's files in /sys
// (readSysfsTopology: sysfs_topology.h): the cores it may use (a Slurm
// step's cgroup hides the others), its NUMA domains, and its GPUs, numbered
// in PCI bus order as CUDA_DEVICE_ORDER=PCI_BUS_ID and ROCm number them.
// `host` names the source ("sysfs on HOST"). IoError (74) when the kernel's
// CPU list cannot be read.
NodeTopology readLocalTopology(const std::string& host);

// The same from an hwloc XML export (`lstopo node.xml`), read with hwloc,
// or a synthetic description ("pack:2 numa:1 core:4 pu:2", hwloc's
// syntax): how a node type is described without running on it, and how
// tests fake one. SystemError (71) when hwloc cannot read it.
NodeTopology readTopologyXml(const std::string& path);
NodeTopology readSyntheticTopology(const std::string& description);

// The variable naming an hwloc XML export read instead of this node
// (docs/environment.md): how a test, or a user, describes a node.
inline constexpr const char* kNodeTopologyVariable = "DISTRUN_NODE_TOPOLOGY";

// This node as distrun run and exec plan it: $DISTRUN_NODE_TOPOLOGY's XML
// when set, else readLocalTopology(host). What those throw.
NodeTopology readNodeTopology(const Environment& env, const std::string& host);

}  // namespace distrun::binding
