#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "distrun/binding/cpu_list.h"

namespace distrun::binding {

// What a rank can be bound to on one node: its cores (one logical CPU
// each, the first hardware thread), the NUMA domains they form, and the
// GPUs with the cores closest to each. Read from the running node with
// hwloc (local_topology.h) or described by a site profile for a node type
// (LUMI-G, MareNostrum 5 ACC) so that a job can be planned before it runs.
// A plain value; validate() checks that its parts agree.
struct NodeTopology {
  struct Numa {
    int id = 0;
    CpuList cpus;
  };
  struct Gpu {
    int index = 0;  // as the GPU runtime numbers it (CUDA/ROCm device index)
    int numa = 0;   // the NUMA domain it is attached to
    CpuList cpus;   // the cores closest to it, reserved ones included
  };

  std::string source;  // where it was read: "hwloc on nid001", "site profile lumi"
  CpuList cpus;        // every core of the node
  CpuList reserved;    // cores the site keeps from jobs (LUMI: first of each CCD)
  std::vector<Numa> numaNodes;
  std::vector<Gpu> gpus;

  // The cores a job may use: cpus without reserved.
  CpuList usableCpus() const;
  // The NUMA domains holding any of `some` (ascending ids).
  std::vector<int> numaOf(const CpuList& some) const;
  // ConfigError naming `source` when a GPU, NUMA domain or reserved core
  // names a core the node lacks, or a GPU names a NUMA domain it lacks.
  void validate() const;
};

// Adds one description line to `topology`, the text after "node " in a site
// profile (docs/sites.md):
//   cpus 0-63                   every core
//   reserved-cpus 0,8,16        cores kept from jobs
//   numa 3 cpus 48-63           a NUMA domain
//   gpu 0 numa 3 cpus 48-55     a GPU, its NUMA domain and closest cores
// ConfigError naming `where` (file:line) and the expected forms otherwise.
void addTopologyLine(NodeTopology& topology, std::string_view line, const std::string& where);

}  // namespace distrun::binding
