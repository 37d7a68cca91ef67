#pragma once

#include <optional>
#include <string>

#include "distrun/binding/node_topology.h"
#include "distrun/doctor/check_result.h"
#include "distrun/doctor/node_facts.h"
#include "distrun/doctor/probe_context.h"

// Private to distrun/doctor: the "cpu-binding" check's facts, reader and
// judge (docs/doctor.md, "The node's system").

namespace distrun::doctor {

struct BindingFacts {
  binding::CpuList affinity;  // the CPUs this task may run on (usableCpus())
  CpuFacts cpus;              // the node's online CPUs and their cores
  // The CPUs the job may use on this node: the cgroup's cpuset, else every
  // online CPU; `jobCpusSource` says which ("the cgroup cpuset", "the
  // online CPUs").
  binding::CpuList jobCpus;
  std::string jobCpusSource;
  std::optional<int> slurmCpusOnNode;  // SLURM_CPUS_ON_NODE
  // The node the plan is made on: the site profile's `node` description,
  // else this node read with hwloc; nullopt with `nodeError` when neither.
  std::optional<binding::NodeTopology> node;
  std::string nodeError;
  RanksPerNode ranks;
  int localRank = 0;
  // Several tasks on this node, one per rank (srun starts each): each
  // task's affinity is its rank's share. Else one task (distrun run) binds
  // the node's ranks itself and needs every core of the plan.
  bool oneTaskPerRank = false;
};

// Reads the facts of this task: its affinity, the CPUs under `root` ("" for
// this machine), the cgroup's cpuset, the plan's node (ctx.site's, else
// hwloc's) and the ranks per node. Never throws.
BindingFacts readBindingFacts(const ProbeContext& ctx, const std::string& root);

// "cpu-binding": the plan is distrun run's (binding::bindRanks with the
// job's cores as the allowed ones). One task per rank: fails when the task
// lacks a core of its rank's share, warns when it may also run elsewhere.
// One task per node: fails when it lacks a core of the plan. When Slurm
// gave the job fewer CPUs of the node (SLURM_CPUS_ON_NODE) than the cpuset
// shows (no cgroup confines it), which CPUs are the job's is unknown and
// only the counts are compared. Warns when the ranks outnumber the cores;
// skips when the node cannot be read.
CheckResult judgeCpuBinding(const BindingFacts& facts);

}  // namespace distrun::doctor
