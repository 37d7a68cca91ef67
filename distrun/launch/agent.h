#pragma once

#include <iosfwd>
#include <string>

#include "distrun/common/clock.h"
#include "distrun/common/environment.h"
#include "distrun/launch/agent_config.h"
#include "distrun/launch/process_launcher.h"
#include "distrun/launch/progress_probe.h"

namespace distrun::launch {

// The node agent of `distrun run`: hosts the store on node 0, joins the
// rendezvous, starts this node's workers, supervises them with every other
// node, and reports the root cause of a failed job. The decisions are
// a Supervisor's (supervisor.h); the Agent is its driver: it polls the
// agent's signals, the store's event sequence and the workers' pipes,
// feeds what happened to the Supervisor and carries out its actions.
// run() returns the exit code: 0, the first failing worker's code
// (128+signal for a signal; 75 for a hung one, with --hang-timeout), or
// 128+N when the agent got signal N. Throws
// RendezvousError/TimeoutError when the job cannot form or loses its
// store, IoError when the failure report cannot be written.
class Agent {
 public:
  // `env` is the environment the workers inherit; `clock`, `launcher` and
  // `probe` (where --hang-timeout reads the workers' CPU time) must outlive
  // the agent.
  Agent(AgentConfig config, const Environment& env, std::ostream& err,
        const Clock& clock = steadyClock(), ProcessLauncher& launcher = systemProcessLauncher(),
        const ProgressProbe& probe = ProcProgressProbe::system());
  int run();

  // One SteadyClock for the whole process.
  static const Clock& steadyClock();

 private:
  class Loop;
  std::string placeRunFolder();

  AgentConfig config_;
  const Environment& env_;
  std::ostream& err_;
  const Clock& clock_;
  ProcessLauncher& launcher_;
  const ProgressProbe& probe_;
};

}  // namespace distrun::launch
