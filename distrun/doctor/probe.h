#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "distrun/common/environment.h"
#include "distrun/common/system.h"
#include "distrun/doctor/check_result.h"
#include "distrun/doctor/doctor_options.h"
#include "distrun/doctor/probe_context.h"

namespace distrun::doctor {

// The context of this task: the site profile (--site, else detected), the
// task's place in its job (cluster::thisTask: the scheduler's variables
// checked against each other) and its environment as `distrun exec` would
// give it. A layout that cannot be read does not throw: it is kept in
// layoutError for the scheduler check, and the task checks its node alone.
// What selectSiteProfile throws for an unknown --site (ConfigError).
std::shared_ptr<ProbeContext> makeProbeContext(const Environment& env, const HostFacts& host,
                                               const DoctorOptions& options,
                                               const std::string& builtinSiteDir,
                                               const std::string& toolDir);

// Runs this task's part of the doctor: every task checks its node (a
// node's further tasks only their CPU binding), reports to rank 0 through
// the meeting's store, and the nodes' first tasks measure an allreduce
// together. Rank 0 returns the whole report, every node in order, the
// nodes that never reported failing "answer"; the other tasks return
// nullopt once rank 0 is done. A task alone in its world returns its own
// report without any store. Throws what the store throws when this task
// cannot reach rank 0's node (RendezvousError, TimeoutError), and
// SystemError on rank 0 when the doctor's port cannot be bound.
std::optional<DoctorReport> runProbe(std::shared_ptr<const ProbeContext> ctx, std::ostream& err);

}  // namespace distrun::doctor
