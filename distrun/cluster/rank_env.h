#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "distrun/cluster/job_layout.h"
#include "distrun/cluster/site_profile.h"
#include "distrun/common/environment.h"

namespace distrun::cluster {

// One variable of a task's environment and where its value came from.
struct RankVariable {
  enum class Source {
    kDerived,   // computed by distrun; the user had not set it
    kKept,      // the user had set it, and user values win for this one
    kReplaced,  // the user had set it to `previous`, but it names this
                // task's identity and must come from the scheduler
    kSite,      // from the site profile
  };
  std::string name;
  std::string value;
  Source source = Source::kDerived;
  std::string previous;
};

// The environment `distrun exec` gives a task: torchrun's worker contract
// (docs/environment.md) plus the site profile's settings.
struct RankEnvironment {
  std::vector<RankVariable> variables;  // in contract order, then site ones
  std::string siteName;                 // empty when no profile applies
  std::vector<std::string> nodeDirs;    // directories to create on this node
  std::vector<std::string> notes;
  bool masterPortDerived = false;  // true when distrun chose MASTER_PORT

  const RankVariable* find(const std::string& name) const;
};

struct RankEnvironmentOptions {
  std::optional<SiteProfile> site;
  int restartCount = 0;
  int maxRestarts = 0;
  // Supplies a free port when a one-node world has no job id to derive one.
  std::function<int()> pickFreePort;
  // CPUs this process may run on, for OMP_NUM_THREADS.
  int usableCpus = 1;
  // Set by a launcher that decided these itself (`distrun run`): they
  // replace the user's values like identity variables do.
  std::optional<std::string> masterAddr;
  std::optional<int> masterPort;
  std::optional<std::string> runId;
  std::optional<std::string> roleName;
  // Extra variables the launcher sets last (TORCHELASTIC_ERROR_FILE, ...).
  std::vector<std::pair<std::string, std::string>> launcherVariables;
};

// Builds the task's environment from its layout and the user's environment
// (a task finds its own with thisTask, this_task.h; `distrun run`'s agent
// builds its workers' with this).
// Identity variables (RANK, LOCAL_RANK, WORLD_SIZE, ...) always come from
// the layout; for everything else a value the user already set wins.
// Throws ConfigError when MASTER_PORT cannot be chosen or a site value
// refers to an unset variable.
// A site value may use ${USER} and ${SLURM_NODEID} where the environment
// lacks them (a batch script's first line, outside a step): siteFallbacks.
RankEnvironment buildRankEnvironment(const JobLayout& layout, const Environment& user,
                                     const RankEnvironmentOptions& options);

// Creates `env.nodeDirs` (the site profile's node-dir folders, parents
// too), as every launcher does before its program runs: `distrun exec`
// for its task, `distrun run` for each worker. Every task on a node may
// race to create the same folder; an existing one is success. IoError
// (exit 74) naming the profile and the folder otherwise.
void makeNodeDirs(const RankEnvironment& env);

}  // namespace distrun::cluster
