#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "distrun/common/environment.h"
#include "distrun/common/system.h"

namespace distrun::doctor {

// What `distrun doctor` reads from and does to the world.
struct DoctorContext {
  const Environment& env;
  std::ostream& out;
  std::ostream& err;
  std::function<HostFacts()> hostFacts = readHostFacts;
  std::string executable;      // this binary (distrun-doctor), to start it under srun
  std::string builtinSiteDir;  // share/distrun/sites
  std::string toolDir;         // the folder of distrun (distrun enter for --container)
  // Replaces this process with argv (srun over the allocation's nodes).
  // Returns only by throwing.
  std::function<void(const std::vector<std::string>&)> exec;
};

// `distrun doctor [--format table|json|nhc] [--min-busbw GB/S] [--checks
// LIST] [--site NAME] ...` (docs/doctor.md). Where it runs decides what it
// checks:
//  - a task of a job step (srun, or `distrun submit -- doctor`): one probe
//    per task, every node's results gathered to rank 0, which prints;
//  - inside a Slurm allocation but outside a step (an salloc shell, a batch
//    script): starts itself with srun, one task per node of the allocation;
//  - bare, or with --here: this node alone.
// Returns 0 when no check failed (warnings allowed), 80 (kCheckFailed) when
// one did or a node did not answer, or an error's code (printed as one line).
int runDoctorCli(const std::vector<std::string>& args, DoctorContext& ctx);

// The srun command line that runs `args` of distrun-doctor on every node of
// the allocation `env` describes, one task per node holding the node.
std::vector<std::string> srunOverAllocation(const Environment& env, const std::string& executable,
                                            const std::vector<std::string>& args);

}  // namespace distrun::doctor
