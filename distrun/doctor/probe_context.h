#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "distrun/cluster/job_layout.h"
#include "distrun/cluster/site_profile.h"
#include "distrun/common/environment.h"
#include "distrun/common/system.h"
#include "distrun/doctor/doctor_options.h"

namespace distrun::doctor {

// Everything a check may read about the node it runs on and the job it
// belongs to. Made once per probe; checks only read it (several run at once
// in their own threads), so it must outlive every check thread: probes hold
// it in a shared_ptr.
struct ProbeContext {
  // The task's environment as the training's tasks will see it: the
  // process's own with the site profile's settings and the rank variables
  // laid over (what `distrun exec` gives: NCCL_SOCKET_IFNAME from LUMI's
  // profile, MASTER_ADDR, MASTER_PORT, ...).
  MapEnvironment env;
  DoctorOptions options;
  // Where this task sits (standalone when run bare). When the scheduler's
  // variables could not be read, `layoutError` says why and `layout` is
  // detectStandalone's.
  cluster::JobLayout layout;
  std::string layoutError;
  std::optional<cluster::SiteProfile> site;
  HostFacts host;
  std::string node;     // this node's name as the report shows it
  std::string toolDir;  // the folder of distrun and its siblings (distrun enter)
  // How long each check may run (options.timeLimit); external programs a
  // check runs get this as their limit too.
  std::chrono::milliseconds limit() const { return options.timeLimit; }
  // Whether this node hosts rank 0 (MASTER_ADDR's side of the job).
  bool isMasterNode() const { return layout.nodeRank == 0; }
};

}  // namespace distrun::doctor
